
use builtin;
use str;

set edit:completion:arg-completer[doctor] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'doctor'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'doctor'= {
            cand --output-format 'How to print the report'
            cand --color 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)'
            cand --apply-plan '`sessions apply FILE`'
            cand --sessions-dir '`--sessions-dir` of the flag forms'
            cand --max-actions '`--max-actions` of repair and sweep'
            cand --artifact-idle '`--artifact-idle` of repair'
            cand --plan-out '`--plan-out` of repair'
            cand --restore '`sessions restore RUN`'
            cand --item '`--item` of restore'
            cand --older-than '`--older-than` of purge'
            cand --root '`--root` of the sweep'
            cand --min-age '`--min-age` of the sweep'
            cand --json 'The same as --output-format json'
            cand -q 'Print only errors and, for a real run, the notice line'
            cand --quiet 'Print only errors and, for a real run, the notice line'
            cand -v 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --verbose 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --no-progress 'Never draw progress on stderr'
            cand --no-cache 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
            cand --repair-sessions '`sessions repair`'
            cand --dry-run '`--dry-run` of the flag forms: only with a command flag'
            cand --check '`--check` of repair and sweep'
            cand --assume-session-store '`--assume-session-store` of repair'
            cand --allow-mass-set-aside '`--allow-mass-set-aside` of repair'
            cand --purge-set-aside '`sessions purge`'
            cand --force '`--force` of purge'
            cand --sweep-build-dirs '`build-dirs sweep`'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand status 'What a repair would do now, the last repair, and the set-aside runs (the default)'
            cand sessions 'The session store: repair it, apply a saved plan, list, restore or purge set-aside runs'
            cand build-dirs 'Leaked build work directories (Go''s go-build<n>, go-link-<n>)'
            cand rule 'Explain a rule: with no CODE, a table of every rule'
            cand completions 'Print a shell completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'doctor;status'= {
            cand --sessions-dir 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)'
            cand --output-format 'How to print the report'
            cand --color 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)'
            cand --json 'The same as --output-format json'
            cand -q 'Print only errors and, for a real run, the notice line'
            cand --quiet 'Print only errors and, for a real run, the notice line'
            cand -v 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --verbose 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --no-progress 'Never draw progress on stderr'
            cand --no-cache 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'doctor;sessions'= {
            cand --output-format 'How to print the report'
            cand --color 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)'
            cand --json 'The same as --output-format json'
            cand -q 'Print only errors and, for a real run, the notice line'
            cand --quiet 'Print only errors and, for a real run, the notice line'
            cand -v 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --verbose 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --no-progress 'Never draw progress on stderr'
            cand --no-cache 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand repair 'Plan the sessions rules (R1-R5) and apply the plan (--dry-run: only print it)'
            cand apply 'Apply a plan written by --plan-out exactly, without planning again (- reads stdin)'
            cand list 'List the set-aside runs, or the numbered items of one run'
            cand restore 'Move the items of a set-aside run back to their original paths, verified first'
            cand purge 'Delete whole set-aside runs older than a duration (the only deletion of session data)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'doctor;sessions;repair'= {
            cand --sessions-dir 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)'
            cand --max-actions 'Apply at most N actions; the rest are reported as deferred'
            cand --artifact-idle 'How long an artifact directory must be unchanged before R5 sets it aside'
            cand --select 'Only these rules (comma-separated codes: R1,R3)'
            cand --ignore 'Not these rules (comma-separated codes)'
            cand --plan-out 'Also write the plan to FILE (- : standard output, the report then goes to stderr)'
            cand --output-format 'How to print the report'
            cand --color 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)'
            cand --dry-run 'Plan and print; write nothing'
            cand --check 'Exit 3 when any action is planned or deferred (implies --dry-run): for CI'
            cand --assume-session-store 'Plan in a directory that does not look like a session store'
            cand --allow-mass-set-aside 'Let R1 set aside more than half of a store''s documents'
            cand --json 'The same as --output-format json'
            cand -q 'Print only errors and, for a real run, the notice line'
            cand --quiet 'Print only errors and, for a real run, the notice line'
            cand -v 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --verbose 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --no-progress 'Never draw progress on stderr'
            cand --no-cache 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'doctor;sessions;apply'= {
            cand --output-format 'How to print the report'
            cand --color 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)'
            cand --json 'The same as --output-format json'
            cand -q 'Print only errors and, for a real run, the notice line'
            cand --quiet 'Print only errors and, for a real run, the notice line'
            cand -v 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --verbose 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --no-progress 'Never draw progress on stderr'
            cand --no-cache 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'doctor;sessions;list'= {
            cand --sessions-dir 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)'
            cand --output-format 'How to print the report'
            cand --color 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)'
            cand --json 'The same as --output-format json'
            cand -q 'Print only errors and, for a real run, the notice line'
            cand --quiet 'Print only errors and, for a real run, the notice line'
            cand -v 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --verbose 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --no-progress 'Never draw progress on stderr'
            cand --no-cache 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'doctor;sessions;restore'= {
            cand --item 'Only this item: its original path, or its number in `sessions list RUN`; repeatable'
            cand --sessions-dir 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)'
            cand --output-format 'How to print the report'
            cand --color 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)'
            cand --dry-run 'Plan and print; write nothing'
            cand --json 'The same as --output-format json'
            cand -q 'Print only errors and, for a real run, the notice line'
            cand --quiet 'Print only errors and, for a real run, the notice line'
            cand -v 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --verbose 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --no-progress 'Never draw progress on stderr'
            cand --no-cache 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'doctor;sessions;purge'= {
            cand --older-than 'The minimum age of a run to purge (30m, 36h, 2w, 1day, 1h30m)'
            cand --sessions-dir 'The sessions directory (default: $CODEWHALE_HOME/sessions, else ~/.codewhale/sessions, the home found as the app finds it: HOME, USERPROFILE, on Windows HOMEDRIVE+HOMEPATH)'
            cand --output-format 'How to print the report'
            cand --color 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)'
            cand --force 'Purge runs that do not match their manifests too'
            cand --dry-run 'Plan and print; write nothing'
            cand --json 'The same as --output-format json'
            cand -q 'Print only errors and, for a real run, the notice line'
            cand --quiet 'Print only errors and, for a real run, the notice line'
            cand -v 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --verbose 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --no-progress 'Never draw progress on stderr'
            cand --no-cache 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'doctor;sessions;help'= {
            cand repair 'Plan the sessions rules (R1-R5) and apply the plan (--dry-run: only print it)'
            cand apply 'Apply a plan written by --plan-out exactly, without planning again (- reads stdin)'
            cand list 'List the set-aside runs, or the numbered items of one run'
            cand restore 'Move the items of a set-aside run back to their original paths, verified first'
            cand purge 'Delete whole set-aside runs older than a duration (the only deletion of session data)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'doctor;sessions;help;repair'= {
        }
        &'doctor;sessions;help;apply'= {
        }
        &'doctor;sessions;help;list'= {
        }
        &'doctor;sessions;help;restore'= {
        }
        &'doctor;sessions;help;purge'= {
        }
        &'doctor;sessions;help;help'= {
        }
        &'doctor;build-dirs'= {
            cand --output-format 'How to print the report'
            cand --color 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)'
            cand --json 'The same as --output-format json'
            cand -q 'Print only errors and, for a real run, the notice line'
            cand --quiet 'Print only errors and, for a real run, the notice line'
            cand -v 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --verbose 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --no-progress 'Never draw progress on stderr'
            cand --no-cache 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand sweep 'Reclaim leaked Go work directories that no live process uses (--dry-run: only print)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'doctor;build-dirs;sweep'= {
            cand --root 'A root to sweep, repeatable (default: $GOTMPDIR when set, and the OS temp dir)'
            cand --min-age 'How long a work directory must be unchanged to be reclaimed'
            cand --max-actions 'Apply at most N actions; the rest are reported as deferred'
            cand --select 'Only these rules (comma-separated codes)'
            cand --ignore 'Not these rules (comma-separated codes)'
            cand --output-format 'How to print the report'
            cand --color 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)'
            cand --dry-run 'Plan and print; delete nothing'
            cand --check 'Exit 3 when any action is planned or deferred (implies --dry-run): for CI'
            cand --json 'The same as --output-format json'
            cand -q 'Print only errors and, for a real run, the notice line'
            cand --quiet 'Print only errors and, for a real run, the notice line'
            cand -v 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --verbose 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --no-progress 'Never draw progress on stderr'
            cand --no-cache 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'doctor;build-dirs;help'= {
            cand sweep 'Reclaim leaked Go work directories that no live process uses (--dry-run: only print)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'doctor;build-dirs;help;sweep'= {
        }
        &'doctor;build-dirs;help;help'= {
        }
        &'doctor;rule'= {
            cand --output-format 'How to print the report'
            cand --color 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)'
            cand --json 'The same as --output-format json'
            cand -q 'Print only errors and, for a real run, the notice line'
            cand --quiet 'Print only errors and, for a real run, the notice line'
            cand -v 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --verbose 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --no-progress 'Never draw progress on stderr'
            cand --no-cache 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'doctor;completions'= {
            cand --output-format 'How to print the report'
            cand --color 'Colour in the text output (auto: only on a terminal, never when NO_COLOR is set)'
            cand --json 'The same as --output-format json'
            cand -q 'Print only errors and, for a real run, the notice line'
            cand --quiet 'Print only errors and, for a real run, the notice line'
            cand -v 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --verbose 'More logs on stderr: -v phases, -vv each action, -vvv everything'
            cand --no-progress 'Never draw progress on stderr'
            cand --no-cache 'Neither read nor write the verdict cache ($XDG_CACHE_HOME/doctor): judge every file'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'doctor;help'= {
            cand status 'What a repair would do now, the last repair, and the set-aside runs (the default)'
            cand sessions 'The session store: repair it, apply a saved plan, list, restore or purge set-aside runs'
            cand build-dirs 'Leaked build work directories (Go''s go-build<n>, go-link-<n>)'
            cand rule 'Explain a rule: with no CODE, a table of every rule'
            cand completions 'Print a shell completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'doctor;help;status'= {
        }
        &'doctor;help;sessions'= {
            cand repair 'Plan the sessions rules (R1-R5) and apply the plan (--dry-run: only print it)'
            cand apply 'Apply a plan written by --plan-out exactly, without planning again (- reads stdin)'
            cand list 'List the set-aside runs, or the numbered items of one run'
            cand restore 'Move the items of a set-aside run back to their original paths, verified first'
            cand purge 'Delete whole set-aside runs older than a duration (the only deletion of session data)'
        }
        &'doctor;help;sessions;repair'= {
        }
        &'doctor;help;sessions;apply'= {
        }
        &'doctor;help;sessions;list'= {
        }
        &'doctor;help;sessions;restore'= {
        }
        &'doctor;help;sessions;purge'= {
        }
        &'doctor;help;build-dirs'= {
            cand sweep 'Reclaim leaked Go work directories that no live process uses (--dry-run: only print)'
        }
        &'doctor;help;build-dirs;sweep'= {
        }
        &'doctor;help;rule'= {
        }
        &'doctor;help;completions'= {
        }
        &'doctor;help;help'= {
        }
    ]
    $completions[$command]
}
