# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_doctor_global_optspecs
    string join \n output-format= json color= q/quiet v/verbose no-progress no-cache repair-sessions apply-plan= sessions-dir= dry-run max-actions= artifact-idle= plan-out= check assume-session-store allow-mass-set-aside restore= item= purge-set-aside older-than= force sweep-build-dirs root= min-age= h/help V/version
end

function __fish_doctor_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_doctor_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_doctor_using_subcommand
    set -l cmd (__fish_doctor_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c doctor -n "__fish_doctor_needs_command" -l output-format -d 'How to print the report' -r -f -a "text\t'The human report'
json\t'One JSON document'
json-lines\t'One JSON object per line: progress, actions, then the summary'
github\t'GitHub Actions workflow commands (annotations), and the markdown report appended to `$GITHUB_STEP_SUMMARY`'
markdown\t'A markdown report, fit for a pull-request comment'
junit\t'JUnit XML: a test suite per rule, a test case per planned action'"
complete -c doctor -n "__fish_doctor_needs_command" -l color -d 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)' -r -f -a "auto\t'Colour on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always colour'
never\t'Never colour'"
complete -c doctor -n "__fish_doctor_needs_command" -l apply-plan -d '`sessions apply FILE`' -r -F
complete -c doctor -n "__fish_doctor_needs_command" -l sessions-dir -d '`--sessions-dir` of the flag forms' -r -F
complete -c doctor -n "__fish_doctor_needs_command" -l max-actions -d '`--max-actions` of repair and sweep' -r
complete -c doctor -n "__fish_doctor_needs_command" -l artifact-idle -d '`--artifact-idle` of repair' -r
complete -c doctor -n "__fish_doctor_needs_command" -l plan-out -d '`--plan-out` of repair' -r -F
complete -c doctor -n "__fish_doctor_needs_command" -l restore -d '`sessions restore RUN`' -r
complete -c doctor -n "__fish_doctor_needs_command" -l item -d '`--item` of restore' -r
complete -c doctor -n "__fish_doctor_needs_command" -l older-than -d '`--older-than` of purge' -r
complete -c doctor -n "__fish_doctor_needs_command" -l root -d '`--root` of the sweep' -r -F
complete -c doctor -n "__fish_doctor_needs_command" -l min-age -d '`--min-age` of the sweep' -r
complete -c doctor -n "__fish_doctor_needs_command" -l json -d 'The same as --output-format json'
complete -c doctor -n "__fish_doctor_needs_command" -s q -l quiet -d 'Print only errors and, for a real run, the notice line'
complete -c doctor -n "__fish_doctor_needs_command" -s v -l verbose -d 'More logs on stderr: -v phases, -vv each action, -vvv everything'
complete -c doctor -n "__fish_doctor_needs_command" -l no-progress -d 'Never draw progress on stderr'
complete -c doctor -n "__fish_doctor_needs_command" -l no-cache -d 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
complete -c doctor -n "__fish_doctor_needs_command" -l repair-sessions -d '`sessions repair`'
complete -c doctor -n "__fish_doctor_needs_command" -l dry-run -d '`--dry-run` of the flag forms: only with a command flag'
complete -c doctor -n "__fish_doctor_needs_command" -l check -d '`--check` of repair and sweep'
complete -c doctor -n "__fish_doctor_needs_command" -l assume-session-store -d '`--assume-session-store` of repair'
complete -c doctor -n "__fish_doctor_needs_command" -l allow-mass-set-aside -d '`--allow-mass-set-aside` of repair'
complete -c doctor -n "__fish_doctor_needs_command" -l purge-set-aside -d '`sessions purge`'
complete -c doctor -n "__fish_doctor_needs_command" -l force -d '`--force` of purge'
complete -c doctor -n "__fish_doctor_needs_command" -l sweep-build-dirs -d '`build-dirs sweep`'
complete -c doctor -n "__fish_doctor_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c doctor -n "__fish_doctor_needs_command" -s V -l version -d 'Print version'
complete -c doctor -n "__fish_doctor_needs_command" -f -a "status" -d 'What a repair would do now, the last repair, and the set-aside runs (the default)'
complete -c doctor -n "__fish_doctor_needs_command" -f -a "sessions" -d 'The session store: repair it, apply a saved plan, list, restore or purge set-aside runs'
complete -c doctor -n "__fish_doctor_needs_command" -f -a "build-dirs" -d 'Leaked build work directories (Go\'s go-build<n>, go-link-<n>)'
complete -c doctor -n "__fish_doctor_needs_command" -f -a "rule" -d 'Explain a rule: with no CODE, a table of every rule'
complete -c doctor -n "__fish_doctor_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c doctor -n "__fish_doctor_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c doctor -n "__fish_doctor_using_subcommand status" -l sessions-dir -d 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)' -r -F
complete -c doctor -n "__fish_doctor_using_subcommand status" -l output-format -d 'How to print the report' -r -f -a "text\t'The human report'
json\t'One JSON document'
json-lines\t'One JSON object per line: progress, actions, then the summary'
github\t'GitHub Actions workflow commands (annotations), and the markdown report appended to `$GITHUB_STEP_SUMMARY`'
markdown\t'A markdown report, fit for a pull-request comment'
junit\t'JUnit XML: a test suite per rule, a test case per planned action'"
complete -c doctor -n "__fish_doctor_using_subcommand status" -l color -d 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)' -r -f -a "auto\t'Colour on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always colour'
never\t'Never colour'"
complete -c doctor -n "__fish_doctor_using_subcommand status" -l json -d 'The same as --output-format json'
complete -c doctor -n "__fish_doctor_using_subcommand status" -s q -l quiet -d 'Print only errors and, for a real run, the notice line'
complete -c doctor -n "__fish_doctor_using_subcommand status" -s v -l verbose -d 'More logs on stderr: -v phases, -vv each action, -vvv everything'
complete -c doctor -n "__fish_doctor_using_subcommand status" -l no-progress -d 'Never draw progress on stderr'
complete -c doctor -n "__fish_doctor_using_subcommand status" -l no-cache -d 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
complete -c doctor -n "__fish_doctor_using_subcommand status" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and not __fish_seen_subcommand_from repair apply list restore purge help" -l output-format -d 'How to print the report' -r -f -a "text\t'The human report'
json\t'One JSON document'
json-lines\t'One JSON object per line: progress, actions, then the summary'
github\t'GitHub Actions workflow commands (annotations), and the markdown report appended to `$GITHUB_STEP_SUMMARY`'
markdown\t'A markdown report, fit for a pull-request comment'
junit\t'JUnit XML: a test suite per rule, a test case per planned action'"
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and not __fish_seen_subcommand_from repair apply list restore purge help" -l color -d 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)' -r -f -a "auto\t'Colour on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always colour'
never\t'Never colour'"
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and not __fish_seen_subcommand_from repair apply list restore purge help" -l json -d 'The same as --output-format json'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and not __fish_seen_subcommand_from repair apply list restore purge help" -s q -l quiet -d 'Print only errors and, for a real run, the notice line'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and not __fish_seen_subcommand_from repair apply list restore purge help" -s v -l verbose -d 'More logs on stderr: -v phases, -vv each action, -vvv everything'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and not __fish_seen_subcommand_from repair apply list restore purge help" -l no-progress -d 'Never draw progress on stderr'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and not __fish_seen_subcommand_from repair apply list restore purge help" -l no-cache -d 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and not __fish_seen_subcommand_from repair apply list restore purge help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and not __fish_seen_subcommand_from repair apply list restore purge help" -f -a "repair" -d 'Plan the sessions rules (R1-R5) and apply the plan (--dry-run: only print it)'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and not __fish_seen_subcommand_from repair apply list restore purge help" -f -a "apply" -d 'Apply a plan written by --plan-out exactly, without planning again (- reads stdin)'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and not __fish_seen_subcommand_from repair apply list restore purge help" -f -a "list" -d 'List the set-aside runs, or the numbered items of one run'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and not __fish_seen_subcommand_from repair apply list restore purge help" -f -a "restore" -d 'Move the items of a set-aside run back to their original paths, verified first'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and not __fish_seen_subcommand_from repair apply list restore purge help" -f -a "purge" -d 'Delete whole set-aside runs older than a duration (the only deletion of session data)'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and not __fish_seen_subcommand_from repair apply list restore purge help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l sessions-dir -d 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)' -r -F
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l max-actions -d 'Apply at most N actions; the rest are reported as deferred' -r
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l artifact-idle -d 'How long an artifact directory must be unchanged before R5 sets it aside' -r
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l select -d 'Only these rules (comma-separated codes: R1,R3)' -r
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l ignore -d 'Not these rules (comma-separated codes)' -r
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l plan-out -d 'Also write the plan to FILE (- : standard output, the report then goes to stderr)' -r -F
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l output-format -d 'How to print the report' -r -f -a "text\t'The human report'
json\t'One JSON document'
json-lines\t'One JSON object per line: progress, actions, then the summary'
github\t'GitHub Actions workflow commands (annotations), and the markdown report appended to `$GITHUB_STEP_SUMMARY`'
markdown\t'A markdown report, fit for a pull-request comment'
junit\t'JUnit XML: a test suite per rule, a test case per planned action'"
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l color -d 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)' -r -f -a "auto\t'Colour on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always colour'
never\t'Never colour'"
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l dry-run -d 'Plan and print; write nothing'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l check -d 'Exit 3 when any action is planned or deferred (implies --dry-run): for CI'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l assume-session-store -d 'Plan in a directory that does not look like a session store'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l allow-mass-set-aside -d 'Let R1 set aside more than half of a store\'s documents'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l json -d 'The same as --output-format json'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -s q -l quiet -d 'Print only errors and, for a real run, the notice line'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -s v -l verbose -d 'More logs on stderr: -v phases, -vv each action, -vvv everything'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l no-progress -d 'Never draw progress on stderr'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -l no-cache -d 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from repair" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from apply" -l output-format -d 'How to print the report' -r -f -a "text\t'The human report'
json\t'One JSON document'
json-lines\t'One JSON object per line: progress, actions, then the summary'
github\t'GitHub Actions workflow commands (annotations), and the markdown report appended to `$GITHUB_STEP_SUMMARY`'
markdown\t'A markdown report, fit for a pull-request comment'
junit\t'JUnit XML: a test suite per rule, a test case per planned action'"
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from apply" -l color -d 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)' -r -f -a "auto\t'Colour on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always colour'
never\t'Never colour'"
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from apply" -l json -d 'The same as --output-format json'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from apply" -s q -l quiet -d 'Print only errors and, for a real run, the notice line'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from apply" -s v -l verbose -d 'More logs on stderr: -v phases, -vv each action, -vvv everything'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from apply" -l no-progress -d 'Never draw progress on stderr'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from apply" -l no-cache -d 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from apply" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from list" -l sessions-dir -d 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)' -r -F
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from list" -l output-format -d 'How to print the report' -r -f -a "text\t'The human report'
json\t'One JSON document'
json-lines\t'One JSON object per line: progress, actions, then the summary'
github\t'GitHub Actions workflow commands (annotations), and the markdown report appended to `$GITHUB_STEP_SUMMARY`'
markdown\t'A markdown report, fit for a pull-request comment'
junit\t'JUnit XML: a test suite per rule, a test case per planned action'"
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from list" -l color -d 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)' -r -f -a "auto\t'Colour on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always colour'
never\t'Never colour'"
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from list" -l json -d 'The same as --output-format json'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from list" -s q -l quiet -d 'Print only errors and, for a real run, the notice line'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from list" -s v -l verbose -d 'More logs on stderr: -v phases, -vv each action, -vvv everything'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from list" -l no-progress -d 'Never draw progress on stderr'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from list" -l no-cache -d 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from restore" -l item -d 'Only this item: its original path, or its number in `sessions list RUN`; repeatable' -r
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from restore" -l sessions-dir -d 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)' -r -F
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from restore" -l output-format -d 'How to print the report' -r -f -a "text\t'The human report'
json\t'One JSON document'
json-lines\t'One JSON object per line: progress, actions, then the summary'
github\t'GitHub Actions workflow commands (annotations), and the markdown report appended to `$GITHUB_STEP_SUMMARY`'
markdown\t'A markdown report, fit for a pull-request comment'
junit\t'JUnit XML: a test suite per rule, a test case per planned action'"
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from restore" -l color -d 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)' -r -f -a "auto\t'Colour on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always colour'
never\t'Never colour'"
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from restore" -l dry-run -d 'Plan and print; write nothing'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from restore" -l json -d 'The same as --output-format json'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from restore" -s q -l quiet -d 'Print only errors and, for a real run, the notice line'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from restore" -s v -l verbose -d 'More logs on stderr: -v phases, -vv each action, -vvv everything'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from restore" -l no-progress -d 'Never draw progress on stderr'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from restore" -l no-cache -d 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from restore" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from purge" -l older-than -d 'The minimum age of a run to purge (30m, 36h, 2w, 1day, 1h30m)' -r
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from purge" -l sessions-dir -d 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)' -r -F
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from purge" -l output-format -d 'How to print the report' -r -f -a "text\t'The human report'
json\t'One JSON document'
json-lines\t'One JSON object per line: progress, actions, then the summary'
github\t'GitHub Actions workflow commands (annotations), and the markdown report appended to `$GITHUB_STEP_SUMMARY`'
markdown\t'A markdown report, fit for a pull-request comment'
junit\t'JUnit XML: a test suite per rule, a test case per planned action'"
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from purge" -l color -d 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)' -r -f -a "auto\t'Colour on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always colour'
never\t'Never colour'"
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from purge" -l force -d 'Purge runs that do not match their manifests too'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from purge" -l dry-run -d 'Plan and print; write nothing'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from purge" -l json -d 'The same as --output-format json'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from purge" -s q -l quiet -d 'Print only errors and, for a real run, the notice line'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from purge" -s v -l verbose -d 'More logs on stderr: -v phases, -vv each action, -vvv everything'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from purge" -l no-progress -d 'Never draw progress on stderr'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from purge" -l no-cache -d 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from purge" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from help" -f -a "repair" -d 'Plan the sessions rules (R1-R5) and apply the plan (--dry-run: only print it)'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from help" -f -a "apply" -d 'Apply a plan written by --plan-out exactly, without planning again (- reads stdin)'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from help" -f -a "list" -d 'List the set-aside runs, or the numbered items of one run'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from help" -f -a "restore" -d 'Move the items of a set-aside run back to their original paths, verified first'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from help" -f -a "purge" -d 'Delete whole set-aside runs older than a duration (the only deletion of session data)'
complete -c doctor -n "__fish_doctor_using_subcommand sessions; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and not __fish_seen_subcommand_from sweep help" -l output-format -d 'How to print the report' -r -f -a "text\t'The human report'
json\t'One JSON document'
json-lines\t'One JSON object per line: progress, actions, then the summary'
github\t'GitHub Actions workflow commands (annotations), and the markdown report appended to `$GITHUB_STEP_SUMMARY`'
markdown\t'A markdown report, fit for a pull-request comment'
junit\t'JUnit XML: a test suite per rule, a test case per planned action'"
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and not __fish_seen_subcommand_from sweep help" -l color -d 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)' -r -f -a "auto\t'Colour on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always colour'
never\t'Never colour'"
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and not __fish_seen_subcommand_from sweep help" -l json -d 'The same as --output-format json'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and not __fish_seen_subcommand_from sweep help" -s q -l quiet -d 'Print only errors and, for a real run, the notice line'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and not __fish_seen_subcommand_from sweep help" -s v -l verbose -d 'More logs on stderr: -v phases, -vv each action, -vvv everything'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and not __fish_seen_subcommand_from sweep help" -l no-progress -d 'Never draw progress on stderr'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and not __fish_seen_subcommand_from sweep help" -l no-cache -d 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and not __fish_seen_subcommand_from sweep help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and not __fish_seen_subcommand_from sweep help" -f -a "sweep" -d 'Reclaim leaked Go work directories that no live process uses (--dry-run: only print)'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and not __fish_seen_subcommand_from sweep help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -l root -d 'A root to sweep, repeatable (default: $GOTMPDIR when set, and the OS temp dir)' -r -F
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -l min-age -d 'How long a work directory must be unchanged to be reclaimed' -r
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -l max-actions -d 'Apply at most N actions; the rest are reported as deferred' -r
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -l select -d 'Only these rules (comma-separated codes)' -r
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -l ignore -d 'Not these rules (comma-separated codes)' -r
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -l output-format -d 'How to print the report' -r -f -a "text\t'The human report'
json\t'One JSON document'
json-lines\t'One JSON object per line: progress, actions, then the summary'
github\t'GitHub Actions workflow commands (annotations), and the markdown report appended to `$GITHUB_STEP_SUMMARY`'
markdown\t'A markdown report, fit for a pull-request comment'
junit\t'JUnit XML: a test suite per rule, a test case per planned action'"
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -l color -d 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)' -r -f -a "auto\t'Colour on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always colour'
never\t'Never colour'"
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -l dry-run -d 'Plan and print; delete nothing'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -l check -d 'Exit 3 when any action is planned or deferred (implies --dry-run): for CI'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -l json -d 'The same as --output-format json'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -s q -l quiet -d 'Print only errors and, for a real run, the notice line'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -s v -l verbose -d 'More logs on stderr: -v phases, -vv each action, -vvv everything'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -l no-progress -d 'Never draw progress on stderr'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -l no-cache -d 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from sweep" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from help" -f -a "sweep" -d 'Reclaim leaked Go work directories that no live process uses (--dry-run: only print)'
complete -c doctor -n "__fish_doctor_using_subcommand build-dirs; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c doctor -n "__fish_doctor_using_subcommand rule" -l output-format -d 'How to print the report' -r -f -a "text\t'The human report'
json\t'One JSON document'
json-lines\t'One JSON object per line: progress, actions, then the summary'
github\t'GitHub Actions workflow commands (annotations), and the markdown report appended to `$GITHUB_STEP_SUMMARY`'
markdown\t'A markdown report, fit for a pull-request comment'
junit\t'JUnit XML: a test suite per rule, a test case per planned action'"
complete -c doctor -n "__fish_doctor_using_subcommand rule" -l color -d 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)' -r -f -a "auto\t'Colour on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always colour'
never\t'Never colour'"
complete -c doctor -n "__fish_doctor_using_subcommand rule" -l json -d 'The same as --output-format json'
complete -c doctor -n "__fish_doctor_using_subcommand rule" -s q -l quiet -d 'Print only errors and, for a real run, the notice line'
complete -c doctor -n "__fish_doctor_using_subcommand rule" -s v -l verbose -d 'More logs on stderr: -v phases, -vv each action, -vvv everything'
complete -c doctor -n "__fish_doctor_using_subcommand rule" -l no-progress -d 'Never draw progress on stderr'
complete -c doctor -n "__fish_doctor_using_subcommand rule" -l no-cache -d 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
complete -c doctor -n "__fish_doctor_using_subcommand rule" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c doctor -n "__fish_doctor_using_subcommand completions" -l output-format -d 'How to print the report' -r -f -a "text\t'The human report'
json\t'One JSON document'
json-lines\t'One JSON object per line: progress, actions, then the summary'
github\t'GitHub Actions workflow commands (annotations), and the markdown report appended to `$GITHUB_STEP_SUMMARY`'
markdown\t'A markdown report, fit for a pull-request comment'
junit\t'JUnit XML: a test suite per rule, a test case per planned action'"
complete -c doctor -n "__fish_doctor_using_subcommand completions" -l color -d 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)' -r -f -a "auto\t'Colour on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always colour'
never\t'Never colour'"
complete -c doctor -n "__fish_doctor_using_subcommand completions" -l json -d 'The same as --output-format json'
complete -c doctor -n "__fish_doctor_using_subcommand completions" -s q -l quiet -d 'Print only errors and, for a real run, the notice line'
complete -c doctor -n "__fish_doctor_using_subcommand completions" -s v -l verbose -d 'More logs on stderr: -v phases, -vv each action, -vvv everything'
complete -c doctor -n "__fish_doctor_using_subcommand completions" -l no-progress -d 'Never draw progress on stderr'
complete -c doctor -n "__fish_doctor_using_subcommand completions" -l no-cache -d 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
complete -c doctor -n "__fish_doctor_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c doctor -n "__fish_doctor_using_subcommand help; and not __fish_seen_subcommand_from status sessions build-dirs rule completions help" -f -a "status" -d 'What a repair would do now, the last repair, and the set-aside runs (the default)'
complete -c doctor -n "__fish_doctor_using_subcommand help; and not __fish_seen_subcommand_from status sessions build-dirs rule completions help" -f -a "sessions" -d 'The session store: repair it, apply a saved plan, list, restore or purge set-aside runs'
complete -c doctor -n "__fish_doctor_using_subcommand help; and not __fish_seen_subcommand_from status sessions build-dirs rule completions help" -f -a "build-dirs" -d 'Leaked build work directories (Go\'s go-build<n>, go-link-<n>)'
complete -c doctor -n "__fish_doctor_using_subcommand help; and not __fish_seen_subcommand_from status sessions build-dirs rule completions help" -f -a "rule" -d 'Explain a rule: with no CODE, a table of every rule'
complete -c doctor -n "__fish_doctor_using_subcommand help; and not __fish_seen_subcommand_from status sessions build-dirs rule completions help" -f -a "completions" -d 'Print a shell completion script'
complete -c doctor -n "__fish_doctor_using_subcommand help; and not __fish_seen_subcommand_from status sessions build-dirs rule completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c doctor -n "__fish_doctor_using_subcommand help; and __fish_seen_subcommand_from sessions" -f -a "repair" -d 'Plan the sessions rules (R1-R5) and apply the plan (--dry-run: only print it)'
complete -c doctor -n "__fish_doctor_using_subcommand help; and __fish_seen_subcommand_from sessions" -f -a "apply" -d 'Apply a plan written by --plan-out exactly, without planning again (- reads stdin)'
complete -c doctor -n "__fish_doctor_using_subcommand help; and __fish_seen_subcommand_from sessions" -f -a "list" -d 'List the set-aside runs, or the numbered items of one run'
complete -c doctor -n "__fish_doctor_using_subcommand help; and __fish_seen_subcommand_from sessions" -f -a "restore" -d 'Move the items of a set-aside run back to their original paths, verified first'
complete -c doctor -n "__fish_doctor_using_subcommand help; and __fish_seen_subcommand_from sessions" -f -a "purge" -d 'Delete whole set-aside runs older than a duration (the only deletion of session data)'
complete -c doctor -n "__fish_doctor_using_subcommand help; and __fish_seen_subcommand_from build-dirs" -f -a "sweep" -d 'Reclaim leaked Go work directories that no live process uses (--dry-run: only print)'
