//! The settings of the capabilities that plug into a run (rendering,
//! proxies, entities), each built from the flags over the job file and
//! checked, naming the option at fault; [`super::CrawlConfig::from_sources`]
//! calls them.

use std::time::Duration;

use super::{bad, ConfigError, Focus, Network, Rendering};

/// The options of the entity settings, as an error names them.
pub(super) const ENTITIES: &str = "entities"; // not a dataset: the option --entities
const RELATIONS: &str = "relations"; // not a dataset: the option --relations

/// The rendering settings; with `--render` other than `never`, Chromium
/// must be found now, not at the first page.
pub(super) fn render_config(o: &Rendering) -> Result<crate::fetch::render::RenderConfig, ConfigError> {
    use crate::fetch::render::{find_chromium, RenderConfig, RenderMode};
    let mode = o.render;
    if mode != RenderMode::Never && !crate::fetch::render::BUILT {
        let value = if mode == RenderMode::Auto { "auto" } else { "always" };
        return Err(crate::error::NotBuilt::new(format!("--render {value}"), "render").into());
    }
    if o.render_tabs == 0 {
        return Err(bad("render-tabs", "0; allowed 1 or more"));
    }
    let chromium = o.chromium.clone();
    let chromium = if mode == RenderMode::Never {
        chromium
    } else {
        Some(find_chromium(chromium.as_deref()).map_err(|e| bad("render", e))?)
    };
    Ok(RenderConfig {
        mode,
        chromium,
        tabs: o.render_tabs,
        timeout: o.render_timeout.0,
        max_pages: o.render_max,
        rule_patterns: Vec::new(),
        no_sandbox: o.render_no_sandbox,
    })
}

/// The proxy pool's settings: `--proxy` URLs, then the `--proxies` file's,
/// each checked (the file's errors name its line). Credentials in a URL are
/// taken off it into memory (the settings written to the data store name
/// proxies without them); those in the environment are checked now, not at
/// the first request.
pub(super) fn proxy_config(o: &Network) -> Result<crate::fetch::proxy::ProxyConfig, ConfigError> {
    use crate::fetch::proxy::{self, credentials::Credentials, credentials::ProxyAuth};
    let mut raw = Vec::new();
    for u in &o.proxy {
        raw.push(("proxy", u.trim().to_string()));
    }
    if let Some(file) = &o.proxies {
        let listed = proxy::read_proxies_file(file).map_err(|e| bad("proxies", e))?;
        raw.extend(listed.into_iter().map(|u| ("proxies", u)));
    }
    let (mut urls, mut auth) = (Vec::new(), ProxyAuth::default());
    for (option, u) in raw {
        let (bare, creds) = proxy::split_proxy(&u).map_err(|e| bad(option, e))?;
        if let Some(c) = creds {
            if !auth.by_proxy.iter().any(|(p, _)| *p == bare) {
                auth.by_proxy.push((bare.clone(), c));
            }
        }
        urls.push(bare);
    }
    urls.dedup();
    if !urls.is_empty() {
        auth.shared = Credentials::from_env().map_err(|e| bad("proxy", e.to_string()))?;
    }
    if o.proxy_concurrency == 0 {
        return Err(bad("proxy-concurrency", "0; allowed 1 or more"));
    }
    Ok(proxy::ProxyConfig {
        urls,
        delay: Duration::from_millis(o.proxy_delay),
        concurrency: o.proxy_concurrency,
        retry: o.proxy_retry.0,
        auth,
    })
}

/// The entity settings (`--entities`, `--relations`, `--prefer-entities`,
/// `--entity-threshold`), checked: the knowledge base's and the patterns'
/// every bad line is named.
pub(super) fn entity_settings(o: &Focus) -> Result<Option<crate::extract::entities::EntitiesSource>, ConfigError> {
    use crate::extract::entities::EntitiesSource;
    let relations = o.relations.clone();
    let prefer = o.prefer_entities.clone().map(|l| l.0).unwrap_or_default();
    let threshold = o.entity_threshold;
    if !(threshold.is_finite() && (0.0..=1.0).contains(&threshold)) {
        return Err(bad("entity-threshold", format!("{threshold}; allowed 0 to 1")));
    }
    // A threshold alone changes nothing (as its default, it must be
    // allowed alone); patterns and preferences need entities to act on.
    let Some(kb) = o.entities.clone() else {
        for (given, option) in [(relations.is_some(), RELATIONS), (!prefer.is_empty(), "prefer-entities")] {
            if given {
                return Err(bad(option, "works on the entities of a knowledge base: add --entities FILE"));
            }
        }
        return Ok(None);
    };
    EntitiesSource::read(&kb, relations.as_deref(), prefer, threshold).map(Some).map_err(|e| {
        use crate::extract::entities::EntitiesError;
        let option = match &e {
            EntitiesError::Patterns(_) => RELATIONS,
            EntitiesError::Prefer(_) => "prefer-entities",
            EntitiesError::Read { path, .. }
                if relations.as_ref().is_some_and(|r| r.display().to_string() == *path) =>
            {
                RELATIONS
            }
            _ => ENTITIES,
        };
        bad(option, e.to_string())
    })
}
