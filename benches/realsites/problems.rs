//! The cost of problem pages: pairs of default crawls of the corpus alone
//! and with `trouble.test`'s and the test web's problem pages.

use super::*;

/// The cost of problem pages at `depth`: three pairs of default crawls of
/// the corpus alone (`seeds`) and of the corpus with `trouble.test` and the
/// problem pages (`with`), each with a third crawl of the latter without
/// the burst; medians of the pairs' wall ratios, and Scrapy on `with`.
pub(super) fn problem_pairs(web: Web, seeds: &[String], with: &[String], depth: u32, peer: bool) -> Value {
    println!("\n== depth {depth} with problem pages ({})", with[seeds.len()..].join(" "));
    // Stragglers: the same crawl with the problem pages seeded beside it.
    // Three pairs, in turn, so that the machine's drift hits both alike;
    // the ratio quoted is the median of the pairs' ratios.
    let (mut pairs, mut calm_ratios, mut calm_layers) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..3 {
        let clean = layercrawl(web, seeds, depth, &[], &format!("clean-{depth}-{k}"));
        let problem = layercrawl(web, with, depth, &[], &format!("problems-{depth}-{k}"));
        // The same problem pages with the server's outage left out: what the
        // crawler's own handling of them costs, apart from the 30 s in which
        // the server answers nothing but 500s.
        web.farm.set_trouble_burst(Duration::ZERO);
        let calm = layercrawl(web, with, depth, &[], &format!("problems-no-burst-{depth}-{k}"));
        web.farm.set_trouble_burst(BURST);
        let secs = |r: &Run| -> Vec<String> {
            r.summary["layers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|l| format!("{:.2}", l["seconds"].as_f64().unwrap_or(0.0)))
                .collect()
        };
        // Layers past the depth, and the host that held its layers alone
        // the longest (the summary's `slowest_host`).
        let catch_up =
            |r: &Run| r.summary["layers"].as_array().map_or(0, |l| l.len().saturating_sub(depth as usize + 1));
        let slowest = |r: &Run| {
            let w = &r.summary["slowest_host"];
            format!("{} {:.1} s", w["host"].as_str().unwrap_or("-"), w["seconds"].as_f64().unwrap_or(0.0))
        };
        // A crawl with problem pages, against the clean one.
        let against_clean = |r: &Run| {
            format!(
                "{:.2} s ({}): {:.2}x; stragglers per layer {}; catch-up layers {}; slowest host {}; not requested {}",
                r.m.wall,
                secs(r).join(" "),
                r.m.wall / clean.m.wall,
                stragglers(&r.summary),
                catch_up(r),
                slowest(r),
                r.summary["not_requested"]
            )
        };
        println!(
            "pair {k}: without problems {:.2} s ({}), with {}",
            clean.m.wall,
            secs(&clean).join(" "),
            against_clean(&problem)
        );
        println!("        the problem pages without the burst {}", against_clean(&calm));
        calm_layers.push(catch_up(&calm));
        calm_ratios.push(calm.m.wall / clean.m.wall);
        pairs.push((clean, problem));
    }
    let mut ratios: Vec<f64> = pairs.iter().map(|(c, p)| p.m.wall / c.m.wall).collect();
    ratios.sort_by(f64::total_cmp);
    calm_ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    let calm_median = calm_ratios[calm_ratios.len() / 2];
    let (clean, problem) = pairs.swap_remove(pairs.len() / 2);
    println!("with / without problem pages, median of {} pairs: {median:.2}x", ratios.len());
    println!("with the problem pages but without the burst / without problem pages, median: {calm_median:.2}x");
    let mut p = json!({ "seeds_added": &with[seeds.len()..], "clean_wall": clean.m.wall, "problems_wall": problem.m.wall, "ratio_median": median, "ratios": ratios, "no_burst_ratio_median": calm_median, "no_burst_ratios": calm_ratios, "no_burst_catch_up_layers": calm_layers, "stragglers": stragglers(&problem.summary), "not_requested": problem.summary["not_requested"], "layers": problem.summary["layers"] });
    if peer {
        let s = scrapy(web, with, depth, &format!("scrapy-problems-{depth}"));
        let spps = s.summary["pages"].as_f64().unwrap_or(0.0) / s.m.wall;
        println!(
            "Scrapy with problems: {:.2} s, {spps:.0} pages/s; layercrawl {:.0} pages/s: {:.1}x",
            s.m.wall,
            pages_per_s(&problem),
            pages_per_s(&problem) / spps
        );
        p["scrapy_wall"] = json!(s.m.wall);
        p["layercrawl_over_scrapy_pages_per_s"] = json!(pages_per_s(&problem) / spps);
    }
    p
}
