//! `layercrawl docs options` (hidden): the book's options reference
//! (`docs/src/options.md`) rendered from the command line's own definition,
//! so that `--help` and the docs cannot disagree; `layercrawl docs
//! network-policy`: the Kubernetes NetworkPolicy from the crawler's blocked
//! address ranges (`network_policy.rs`). `tests/e2e/docs.rs` checks that
//! the checked-in files are what these print.

mod network_policy;

use clap::{ArgAction, Command};

#[derive(clap::Args)]
pub struct DocsArgs {
    #[command(subcommand)]
    what: DocsWhat,
}

#[derive(clap::Subcommand)]
enum DocsWhat {
    /// Print the options reference as Markdown (docs/src/options.md).
    Options,
    /// Print the Kubernetes NetworkPolicy of the task pods
    /// (jobs/k8s/networkpolicy.yaml), from the blocked address ranges.
    NetworkPolicy,
}

/// Prints what `args` asks for, rendered from `cli`, the whole command line.
pub fn docs(args: &DocsArgs, cli: &Command) {
    match args.what {
        DocsWhat::Options => print!("{}", options_markdown(cli)),
        DocsWhat::NetworkPolicy => print!("{}", network_policy::yaml()),
    }
}

/// Every visible subcommand of `cli` (and theirs, depth first) as a section
/// with a table of its options: name, value, default and help.
pub fn options_markdown(cli: &Command) -> String {
    // Built, clap fills in what the derive leaves to it (an enum's values).
    let mut cli = cli.clone();
    cli.build();
    let mut out = String::from(
        "# Options reference\n\n\
         <!-- Generated from the command line's definition: do not edit. After changing an option, run\n\
         `cargo run -- docs options > docs/src/options.md` (tests/e2e/docs.rs checks this page). -->\n\n\
         Every subcommand and option, as `layercrawl SUBCOMMAND --help` gives them. \
         [Running a crawl](running.md) explains the options of `run` with their reasons, \
         and every option of `run` may also come from a job file (`--job`), under the same name.\n",
    );
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        section(&mut out, &format!("{} {}", cli.get_name(), sub.get_name()), sub);
    }
    out
}

fn section(out: &mut String, path: &str, cmd: &Command) {
    out.push_str(&format!("\n## `{path}`\n\n"));
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        out.push_str(&text(&about.to_string()));
        out.push_str("\n\n");
    }
    let args: Vec<_> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    if args.is_empty() {
        out.push_str("No options.\n");
    } else {
        const TABLE: &str = "| option | value | default | meaning |\n|---|---|---|---|\n";
        out.push_str(TABLE);
        // Options of one concern share a heading in `--help`; here, a table.
        let mut heading = None;
        for arg in args {
            if arg.get_help_heading() != heading {
                heading = arg.get_help_heading();
                out.push_str(&format!("\n### {}\n\n{TABLE}", heading.unwrap_or("Other options")));
            }
            let positional = arg.is_positional();
            let takes_value = !matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count);
            let values: Vec<String> = arg.get_possible_values().iter().map(|v| v.get_name().to_string()).collect();
            // Built, clap names every value: the id in capitals unless the
            // code chose a name. An enum's values say more than that.
            let id = arg.get_id().as_str().to_uppercase();
            let names = arg.get_value_names().map(|n| n.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(" "));
            let name = match (arg.get_long(), arg.get_short()) {
                (Some(long), _) => format!("`--{long}`"),
                (None, Some(short)) => format!("`-{short}`"),
                (None, None) => format!("`{}`", names.clone().unwrap_or_else(|| id.clone())),
            };
            let value = match names {
                _ if !takes_value => String::new(),
                Some(n) if n != id && !positional => n,
                _ if !values.is_empty() => values.join("|"),
                _ if positional => String::new(),
                _ => id,
            };
            let value = if value.is_empty() { value } else { format!("`{}`", cell(&value)) };
            let help = arg.get_long_help().or(arg.get_help()).map(|h| h.to_string()).unwrap_or_default();
            let (help, stated) = split_default(&text(&help));
            let defaults: Vec<String> =
                arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
            let default = match (defaults.is_empty(), stated) {
                (false, _) => format!("`{}`", cell(&defaults.join(","))),
                (true, Some(d)) => format!("`{}`", cell(&d)),
                (true, None) => String::new(),
            };
            let mut meaning = prose(&help);
            if !meaning.is_empty() && !meaning.ends_with('.') {
                meaning.push('.');
            }
            if let Some(env) = arg.get_env().map(|e| e.to_string_lossy()).filter(|e| !help.contains(&**e)) {
                meaning.push_str(&format!(" Environment variable: `{env}`."));
            }
            if arg.is_required_set() {
                meaning.insert_str(0, "Required. ");
            }
            out.push_str(&format!("| {name} | {value} | {default} | {} |\n", meaning.trim()));
        }
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        section(out, &format!("{path} {}", sub.get_name()), sub);
    }
}

/// Help text on one line.
fn text(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The help text without its `[default: …]`, and that default.
fn split_default(help: &str) -> (String, Option<String>) {
    let Some(at) = help.find("[default: ") else { return (help.to_string(), None) };
    let start = at + "[default: ".len();
    let Some(len) = help[start..].find(']') else { return (help.to_string(), None) };
    let rest = format!("{}{}", &help[..at], &help[start + len + 1..]);
    (text(&rest), Some(help[start..start + len].to_string()))
}

/// A value for a code span in a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Help prose for a table cell: `|` escaped everywhere, and outside code
/// spans `<` and `*` too, so that no text turns into HTML or emphasis.
fn prose(s: &str) -> String {
    s.split('`')
        .enumerate()
        .map(|(i, part)| {
            let part = part.replace('|', "\\|");
            if i % 2 == 1 {
                part
            } else {
                part.replace('<', "&lt;").replace('*', "\\*")
            }
        })
        .collect::<Vec<_>>()
        .join("`")
}
