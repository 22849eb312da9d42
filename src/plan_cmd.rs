//! `layercrawl plan check FILE`: a crawl plan checked before a crawl runs
//! it (docs/src/focused-crawling.md).

use std::path::PathBuf;

use serde_json::json;

use layercrawl::focus::parse_plan;
use layercrawl::focus::plan::Combine;

#[derive(clap::Args)]
pub struct PlanArgs {
    #[command(subcommand)]
    command: PlanCommand,
}

#[derive(clap::Subcommand)]
enum PlanCommand {
    /// Check a plan file: every problem with its line and column (exit 2);
    /// else its groups, roles and the seeds its templates make.
    Check {
        file: PathBuf,
        /// Print every seed the templates make, not only their number.
        #[arg(long)]
        seeds: bool,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Why `plan` failed in a way that is the user's to fix (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadPlan(pub String);

pub fn plan(args: PlanArgs) -> anyhow::Result<()> {
    let PlanCommand::Check { file, seeds, json } = args.command;
    let text = std::fs::read_to_string(&file)
        .map_err(|e| BadPlan(format!("cannot read the plan file {}: {e}", file.display())))?;
    let shown = file.display().to_string();
    let plan = match parse_plan(&shown, &text) {
        Ok(plan) => plan,
        Err(e) => {
            if json {
                let problems = layercrawl::rules::file::problems_json(&e.problems);
                println!(
                    "{}",
                    serde_json::to_string_pretty(&json!({"file": shown, "ok": false, "problems": problems}))?
                );
            }
            return Err(BadPlan(format!("{} problem(s) in the plan file:\n{e}", e.problems.len())).into());
        }
    };
    let combine = if plan.combine == Combine::All { "all" } else { "any" };
    if json {
        let groups: Vec<_> = plan
            .groups
            .iter()
            .map(|g| {
                let terms = |ts: &[layercrawl::focus::plan::Term]| ts.iter().map(|t| t.text.clone()).collect::<Vec<_>>();
                json!({"name": g.name, "weight": g.weight, "all": terms(&g.all), "any": terms(&g.any), "not": terms(&g.not), "query": g.query})
            })
            .collect();
        let roles: Vec<_> = plan
            .roles
            .iter()
            .map(|(r, ps)| json!({"role": r.as_str(), "urls": ps.iter().map(|p| p.text.clone()).collect::<Vec<_>>()}))
            .collect();
        let out = json!({
            "file": shown, "ok": true, "name": plan.name, "threshold": plan.threshold, "match": combine,
            "weights": {"title": plan.weights.title, "main_text": plan.weights.main_text, "anchor": plan.weights.anchor},
            "groups": groups, "roles": roles, "seeds": plan.seeds,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!(
        "{shown}: {} groups (match {combine}), threshold {}, {} roles, {} seeds; no problems",
        plan.groups.len(),
        plan.threshold,
        plan.roles.len(),
        plan.seeds.len()
    );
    for g in &plan.groups {
        println!(
            "  {} (weight {}): {} all, {} any, {} not{}",
            g.name,
            g.weight,
            g.all.len(),
            g.any.len(),
            g.not.len(),
            if g.query { "; fills {keywords}" } else { "" }
        );
    }
    if seeds {
        for s in &plan.seeds {
            println!("  seed {s}");
        }
    }
    Ok(())
}
