
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'doctor' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'doctor'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'doctor' {
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'How to print the report')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)')
            [CompletionResult]::new('--apply-plan', '--apply-plan', [CompletionResultType]::ParameterName, '`sessions apply FILE`')
            [CompletionResult]::new('--sessions-dir', '--sessions-dir', [CompletionResultType]::ParameterName, '`--sessions-dir` of the flag forms')
            [CompletionResult]::new('--max-actions', '--max-actions', [CompletionResultType]::ParameterName, '`--max-actions` of repair and sweep')
            [CompletionResult]::new('--artifact-idle', '--artifact-idle', [CompletionResultType]::ParameterName, '`--artifact-idle` of repair')
            [CompletionResult]::new('--plan-out', '--plan-out', [CompletionResultType]::ParameterName, '`--plan-out` of repair')
            [CompletionResult]::new('--restore', '--restore', [CompletionResultType]::ParameterName, '`sessions restore RUN`')
            [CompletionResult]::new('--item', '--item', [CompletionResultType]::ParameterName, '`--item` of restore')
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, '`--older-than` of purge')
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, '`--root` of the sweep')
            [CompletionResult]::new('--min-age', '--min-age', [CompletionResultType]::ParameterName, '`--min-age` of the sweep')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The same as --output-format json')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never draw progress on stderr')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file')
            [CompletionResult]::new('--repair-sessions', '--repair-sessions', [CompletionResultType]::ParameterName, '`sessions repair`')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, '`--dry-run` of the flag forms: only with a command flag')
            [CompletionResult]::new('--check', '--check', [CompletionResultType]::ParameterName, '`--check` of repair and sweep')
            [CompletionResult]::new('--assume-session-store', '--assume-session-store', [CompletionResultType]::ParameterName, '`--assume-session-store` of repair')
            [CompletionResult]::new('--allow-mass-set-aside', '--allow-mass-set-aside', [CompletionResultType]::ParameterName, '`--allow-mass-set-aside` of repair')
            [CompletionResult]::new('--purge-set-aside', '--purge-set-aside', [CompletionResultType]::ParameterName, '`sessions purge`')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, '`--force` of purge')
            [CompletionResult]::new('--sweep-build-dirs', '--sweep-build-dirs', [CompletionResultType]::ParameterName, '`build-dirs sweep`')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'What a repair would do now, the last repair, and the set-aside runs (the default)')
            [CompletionResult]::new('sessions', 'sessions', [CompletionResultType]::ParameterValue, 'The session store: repair it, apply a saved plan, list, restore or purge set-aside runs')
            [CompletionResult]::new('build-dirs', 'build-dirs', [CompletionResultType]::ParameterValue, 'Leaked build work directories (Go''s go-build<n>, go-link-<n>)')
            [CompletionResult]::new('rule', 'rule', [CompletionResultType]::ParameterValue, 'Explain a rule: with no CODE, a table of every rule')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'doctor;status' {
            [CompletionResult]::new('--sessions-dir', '--sessions-dir', [CompletionResultType]::ParameterName, 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)')
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'How to print the report')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The same as --output-format json')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never draw progress on stderr')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'doctor;sessions' {
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'How to print the report')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The same as --output-format json')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never draw progress on stderr')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('repair', 'repair', [CompletionResultType]::ParameterValue, 'Plan the sessions rules (R1-R5) and apply the plan (--dry-run: only print it)')
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Apply a plan written by --plan-out exactly, without planning again (- reads stdin)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the set-aside runs, or the numbered items of one run')
            [CompletionResult]::new('restore', 'restore', [CompletionResultType]::ParameterValue, 'Move the items of a set-aside run back to their original paths, verified first')
            [CompletionResult]::new('purge', 'purge', [CompletionResultType]::ParameterValue, 'Delete whole set-aside runs older than a duration (the only deletion of session data)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'doctor;sessions;repair' {
            [CompletionResult]::new('--sessions-dir', '--sessions-dir', [CompletionResultType]::ParameterName, 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)')
            [CompletionResult]::new('--max-actions', '--max-actions', [CompletionResultType]::ParameterName, 'Apply at most N actions; the rest are reported as deferred')
            [CompletionResult]::new('--artifact-idle', '--artifact-idle', [CompletionResultType]::ParameterName, 'How long an artifact directory must be unchanged before R5 sets it aside')
            [CompletionResult]::new('--select', '--select', [CompletionResultType]::ParameterName, 'Only these rules (comma-separated codes: R1,R3)')
            [CompletionResult]::new('--ignore', '--ignore', [CompletionResultType]::ParameterName, 'Not these rules (comma-separated codes)')
            [CompletionResult]::new('--plan-out', '--plan-out', [CompletionResultType]::ParameterName, 'Also write the plan to FILE (- : standard output, the report then goes to stderr)')
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'How to print the report')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Plan and print; write nothing')
            [CompletionResult]::new('--check', '--check', [CompletionResultType]::ParameterName, 'Exit 3 when any action is planned or deferred (implies --dry-run): for CI')
            [CompletionResult]::new('--assume-session-store', '--assume-session-store', [CompletionResultType]::ParameterName, 'Plan in a directory that does not look like a session store')
            [CompletionResult]::new('--allow-mass-set-aside', '--allow-mass-set-aside', [CompletionResultType]::ParameterName, 'Let R1 set aside more than half of a store''s documents')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The same as --output-format json')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never draw progress on stderr')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'doctor;sessions;apply' {
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'How to print the report')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The same as --output-format json')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never draw progress on stderr')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'doctor;sessions;list' {
            [CompletionResult]::new('--sessions-dir', '--sessions-dir', [CompletionResultType]::ParameterName, 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)')
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'How to print the report')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The same as --output-format json')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never draw progress on stderr')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'doctor;sessions;restore' {
            [CompletionResult]::new('--item', '--item', [CompletionResultType]::ParameterName, 'Only this item: its original path, or its number in `sessions list RUN`; repeatable')
            [CompletionResult]::new('--sessions-dir', '--sessions-dir', [CompletionResultType]::ParameterName, 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)')
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'How to print the report')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Plan and print; write nothing')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The same as --output-format json')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never draw progress on stderr')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'doctor;sessions;purge' {
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'The minimum age of a run to purge (30m, 36h, 2w, 1day, 1h30m)')
            [CompletionResult]::new('--sessions-dir', '--sessions-dir', [CompletionResultType]::ParameterName, 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)')
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'How to print the report')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Purge runs that do not match their manifests too')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Plan and print; write nothing')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The same as --output-format json')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never draw progress on stderr')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'doctor;sessions;help' {
            [CompletionResult]::new('repair', 'repair', [CompletionResultType]::ParameterValue, 'Plan the sessions rules (R1-R5) and apply the plan (--dry-run: only print it)')
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Apply a plan written by --plan-out exactly, without planning again (- reads stdin)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the set-aside runs, or the numbered items of one run')
            [CompletionResult]::new('restore', 'restore', [CompletionResultType]::ParameterValue, 'Move the items of a set-aside run back to their original paths, verified first')
            [CompletionResult]::new('purge', 'purge', [CompletionResultType]::ParameterValue, 'Delete whole set-aside runs older than a duration (the only deletion of session data)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'doctor;sessions;help;repair' {
            break
        }
        'doctor;sessions;help;apply' {
            break
        }
        'doctor;sessions;help;list' {
            break
        }
        'doctor;sessions;help;restore' {
            break
        }
        'doctor;sessions;help;purge' {
            break
        }
        'doctor;sessions;help;help' {
            break
        }
        'doctor;build-dirs' {
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'How to print the report')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The same as --output-format json')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never draw progress on stderr')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('sweep', 'sweep', [CompletionResultType]::ParameterValue, 'Reclaim leaked Go work directories that no live process uses (--dry-run: only print)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'doctor;build-dirs;sweep' {
            [CompletionResult]::new('--root', '--root', [CompletionResultType]::ParameterName, 'A root to sweep, repeatable (default: $GOTMPDIR when set, and the OS temp dir)')
            [CompletionResult]::new('--min-age', '--min-age', [CompletionResultType]::ParameterName, 'How long a work directory must be unchanged to be reclaimed')
            [CompletionResult]::new('--max-actions', '--max-actions', [CompletionResultType]::ParameterName, 'Apply at most N actions; the rest are reported as deferred')
            [CompletionResult]::new('--select', '--select', [CompletionResultType]::ParameterName, 'Only these rules (comma-separated codes)')
            [CompletionResult]::new('--ignore', '--ignore', [CompletionResultType]::ParameterName, 'Not these rules (comma-separated codes)')
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'How to print the report')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Plan and print; delete nothing')
            [CompletionResult]::new('--check', '--check', [CompletionResultType]::ParameterName, 'Exit 3 when any action is planned or deferred (implies --dry-run): for CI')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The same as --output-format json')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never draw progress on stderr')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'doctor;build-dirs;help' {
            [CompletionResult]::new('sweep', 'sweep', [CompletionResultType]::ParameterValue, 'Reclaim leaked Go work directories that no live process uses (--dry-run: only print)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'doctor;build-dirs;help;sweep' {
            break
        }
        'doctor;build-dirs;help;help' {
            break
        }
        'doctor;rule' {
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'How to print the report')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The same as --output-format json')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never draw progress on stderr')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'doctor;completions' {
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'How to print the report')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The same as --output-format json')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only errors and, for a real run, the notice line')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More logs on stderr: -v phases, -vv each action, -vvv everything')
            [CompletionResult]::new('--no-progress', '--no-progress', [CompletionResultType]::ParameterName, 'Never draw progress on stderr')
            [CompletionResult]::new('--no-cache', '--no-cache', [CompletionResultType]::ParameterName, 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'doctor;help' {
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'What a repair would do now, the last repair, and the set-aside runs (the default)')
            [CompletionResult]::new('sessions', 'sessions', [CompletionResultType]::ParameterValue, 'The session store: repair it, apply a saved plan, list, restore or purge set-aside runs')
            [CompletionResult]::new('build-dirs', 'build-dirs', [CompletionResultType]::ParameterValue, 'Leaked build work directories (Go''s go-build<n>, go-link-<n>)')
            [CompletionResult]::new('rule', 'rule', [CompletionResultType]::ParameterValue, 'Explain a rule: with no CODE, a table of every rule')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'doctor;help;status' {
            break
        }
        'doctor;help;sessions' {
            [CompletionResult]::new('repair', 'repair', [CompletionResultType]::ParameterValue, 'Plan the sessions rules (R1-R5) and apply the plan (--dry-run: only print it)')
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Apply a plan written by --plan-out exactly, without planning again (- reads stdin)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the set-aside runs, or the numbered items of one run')
            [CompletionResult]::new('restore', 'restore', [CompletionResultType]::ParameterValue, 'Move the items of a set-aside run back to their original paths, verified first')
            [CompletionResult]::new('purge', 'purge', [CompletionResultType]::ParameterValue, 'Delete whole set-aside runs older than a duration (the only deletion of session data)')
            break
        }
        'doctor;help;sessions;repair' {
            break
        }
        'doctor;help;sessions;apply' {
            break
        }
        'doctor;help;sessions;list' {
            break
        }
        'doctor;help;sessions;restore' {
            break
        }
        'doctor;help;sessions;purge' {
            break
        }
        'doctor;help;build-dirs' {
            [CompletionResult]::new('sweep', 'sweep', [CompletionResultType]::ParameterValue, 'Reclaim leaked Go work directories that no live process uses (--dry-run: only print)')
            break
        }
        'doctor;help;build-dirs;sweep' {
            break
        }
        'doctor;help;rule' {
            break
        }
        'doctor;help;completions' {
            break
        }
        'doctor;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
