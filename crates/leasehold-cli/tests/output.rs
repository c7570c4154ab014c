//! leasehold's own output: colour (`--color`, `$NO_COLOR`), shell completions and manual pages,
//! end to end with the built binary.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests

mod common;

use std::process::Output;

use common::{Env, code, finish, text};

const ESC: char = '\u{1b}';

/// Runs `leasehold ARGS` with `env` set (and colour variables otherwise unset).
fn with_env(env: &Env, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut cmd = env.cmd(args);
    for var in ["NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERM"] {
        cmd.env_remove(var);
    }
    cmd.envs(vars.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    finish(cmd.spawn().unwrap())
}

/// Everything the command printed, both streams.
fn all(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// Item 2 of issue 19: help (stdout), usage errors and the log (stderr) are coloured with
/// `--color always`, and never under `NO_COLOR` without the flag, not even with
/// `CLICOLOR_FORCE`, which otherwise forces colour.
#[test]
fn color_follows_the_flag_and_no_color() {
    let env = Env::new();
    let help = ["--help"];
    let error = ["run", "--lock", "a"]; // no COMMAND: a usage error
    let log = [
        "-v",
        "run",
        "--store",
        env.store(),
        "--lock",
        "a",
        "--",
        "true",
    ];
    let force = [("CLICOLOR_FORCE", "1")];
    let no_color = [("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")];
    for (what, args) in [("help", &help[..]), ("error", &error), ("log", &log)] {
        let mut always = vec!["--color", "always"];
        always.extend_from_slice(args);
        let out = with_env(&env, &always, &[]);
        assert!(
            all(&out).contains(ESC),
            "{what} with --color always: {:?}",
            all(&out)
        );

        let out = with_env(&env, args, &force);
        assert!(
            all(&out).contains(ESC),
            "{what} with CLICOLOR_FORCE: {:?}",
            all(&out)
        );

        let out = with_env(&env, args, &no_color);
        assert!(
            !all(&out).contains(ESC),
            "{what} under NO_COLOR: {:?}",
            all(&out)
        );

        // Given explicitly, `always` beats NO_COLOR; `never` beats CLICOLOR_FORCE.
        let out = with_env(&env, &always, &no_color);
        assert!(all(&out).contains(ESC), "{what}: {:?}", all(&out));
        let mut never = vec!["--color=never"];
        never.extend_from_slice(args);
        let out = with_env(&env, &never, &force);
        assert!(!all(&out).contains(ESC), "{what}: {:?}", all(&out));

        // Not a terminal, nothing forced: plain.
        let out = with_env(&env, args, &[]);
        assert!(!all(&out).contains(ESC), "{what}: {:?}", all(&out));
    }
    let bad = with_env(&env, &["--color", "sometimes", "status", "a"], &[]);
    assert_eq!(code(&bad.status), 125);
    assert!(
        text(&bad.stderr).contains("always"),
        "{}",
        text(&bad.stderr)
    );
}

/// On a terminal (a pseudo-terminal from `script`), the log is coloured by default and plain
/// under `NO_COLOR`.
#[test]
fn the_log_on_a_terminal_honours_no_color() {
    let env = Env::new();
    let args = [
        "-v",
        "run",
        "--store",
        env.store(),
        "--lock",
        "a",
        "--",
        "true",
    ];
    let coloured = finish(
        env.cmd_in_terminal(&args)
            .env_remove("NO_COLOR")
            .spawn()
            .unwrap(),
    );
    assert_eq!(code(&coloured.status), 0);
    let screen = text(&coloured.stdout);
    assert!(
        screen.contains("leasehold: elected") && screen.contains(ESC),
        "{screen:?}"
    );

    let plain = finish(
        env.cmd_in_terminal(&args)
            .env("NO_COLOR", "1")
            .spawn()
            .unwrap(),
    );
    assert_eq!(code(&plain.status), 0);
    let screen = text(&plain.stdout);
    assert!(
        screen.contains("leasehold: elected") && !screen.contains(ESC),
        "{screen:?}"
    );
}

/// The subcommands `leasehold --help` lists.
fn subcommands(env: &Env) -> Vec<String> {
    let help = text(&with_env(env, &["--help"], &[]).stdout);
    let listed = help
        .split("Commands:")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("a Commands: section");
    listed
        .lines()
        // A command's line is indented by two spaces; wrapped descriptions by more.
        .filter_map(|l| l.strip_prefix("  ").filter(|rest| !rest.starts_with(' ')))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Item 3: `completions SHELL` prints a script for each shell; bash's completes every
/// subcommand.
#[test]
fn completion_scripts_cover_every_subcommand() {
    let env = Env::new();
    let names = subcommands(&env);
    for expected in ["run", "status", "release", "completions", "man", "fence"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    let bash = with_env(&env, &["completions", "bash"], &[]);
    assert_eq!(code(&bash.status), 0, "{}", text(&bash.stderr));
    let script = text(&bash.stdout);
    assert!(script.contains("complete -F _leasehold"), "{script}");
    for name in &names {
        assert!(
            script.contains(&format!("leasehold,{name})")),
            "bash completion lacks {name}"
        );
    }
    // The flags of `run` are completed too.
    assert!(script.contains("--metrics-file") && script.contains("--progress-every"));
    for (shell, marker) in [
        ("zsh", "#compdef leasehold"),
        ("fish", "complete -c leasehold"),
        ("elvish", "edit:completion:arg-completer[leasehold]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let out = with_env(&env, &["completions", shell], &[]);
        assert_eq!(code(&out.status), 0, "{shell}");
        assert!(text(&out.stdout).contains(marker), "{shell}");
    }
    let bad = with_env(&env, &["completions", "tcsh"], &[]);
    assert_eq!(code(&bad.status), 125);
}

/// The lines before `.TH`: only the roff string definition of the apostrophe (`\*(Aq`) that
/// clap_mangen's `roff` puts first.
fn assert_starts_with_title(page: &str, title: &str) {
    let th = page.find(".TH ").expect("a .TH line");
    for line in page[..th].lines() {
        assert!(
            line.starts_with(".ie \\n(.g .ds Aq") || line.starts_with(".el .ds Aq"),
            "{line:?} before .TH"
        );
    }
    assert!(page[th..].starts_with(&format!(".TH {title} 1 ")), "{page}");
    assert!(page.contains(".SH NAME") && page.contains(".SH SYNOPSIS"));
}

/// Item 3: `man` prints leasehold.1; `man --dir DIR` writes one page per command.
#[test]
fn manual_pages_are_printed_and_written() {
    let env = Env::new();
    let out = with_env(&env, &["man"], &[]);
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
    let page = text(&out.stdout);
    assert_starts_with_title(&page, "leasehold");
    // The example store URLs of the help text are documentation, not secrets.
    assert!(page.contains("postgres://user:pass@host/db"), "{page}");

    let dir = env.path("man/man1");
    let out = with_env(&env, &["man", "--dir", dir.to_str().unwrap()], &[]);
    assert_eq!(code(&out.status), 0, "{}", text(&out.stderr));
    let mut expected: Vec<String> = subcommands(&env)
        .iter()
        .map(|name| format!("leasehold-{name}.1"))
        .collect();
    expected.extend(
        [
            "leasehold.1",
            "leasehold-fence-init.1",
            "leasehold-fence-sql.1",
        ]
        .map(String::from),
    );
    expected.sort();
    let mut written: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(written, expected);
    // It lists what it wrote.
    assert_eq!(text(&out.stdout).lines().count(), expected.len());
    let run = std::fs::read_to_string(dir.join("leasehold-run.1")).unwrap();
    assert_starts_with_title(&run, "leasehold-run");
    assert!(run.contains("metrics\\-file"), "{run}");
    // The list of the command's variables ends before the next paragraph starts.
    let list_end = run
        .find("LEASEHOLD_PERIOD")
        .and_then(|at| run[at..].find('\n').map(|n| at + n + 1))
        .unwrap_or_default();
    assert!(
        run[list_end..].starts_with(".PP\nWhile it runs"),
        "the variables run into the next paragraph: {}",
        &run[list_end.saturating_sub(80)..(list_end + 40).min(run.len())]
    );

    let file = env.path("a-file");
    std::fs::write(&file, "").unwrap();
    let bad = with_env(&env, &["man", "--dir", file.to_str().unwrap()], &[]);
    assert_eq!(code(&bad.status), 125);
    assert!(text(&bad.stderr).contains("cannot create the directory"));
}
