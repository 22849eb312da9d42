use super::*;

fn args() -> RunArgs {
    RunArgs { seeds: Some("s.txt".into()), depth: Some(2), ..RunArgs::default() }
}

#[test]
fn durations() {
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
    assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
    assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
    assert!(parse_duration("5 parsecs").is_err());
    assert!(parse_duration("0s").is_err());
}

#[test]
fn a_job_file_names_its_rules_relative_to_itself_and_bad_rules_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("j.toml");
    std::fs::write(&job, "seeds = 'seeds.txt'\ndepth = 1\nrules = 'r.toml'\n").expect("write");
    let rules = dir.path().join("r.toml");
    std::fs::write(&rules, "[[rule]]\nname = 'p'\nurls = ['**']\n[[rule.field]]\nname = 't'\ncss = 'h1'\n")
        .expect("write");
    let c = CrawlConfig::from_sources(&RunArgs { job: Some(job.clone()), ..RunArgs::default() }).expect("config");
    let src = c.rules.expect("rules from the job file");
    assert_eq!(src.file, rules.display().to_string());
    assert_eq!(src.compile().expect("valid").list[0].name, "p");
    std::fs::write(
        &rules,
        "[[rule]]\nname = 'p'\nurls = ['**']\n[[rule.field]]\nname = 't'\ncss = 'h1'\ntype = 'money'\n",
    )
    .expect("write");
    let err = CrawlConfig::from_sources(&RunArgs { job: Some(job), ..RunArgs::default() }).expect_err("bad rules");
    assert!(matches!(err, ConfigError::Rules(_)));
    assert!(err.to_string().contains("r.toml:7:8: type `money`"), "{err}");
}

#[test]
fn flags_win_over_job_and_defaults_apply() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("j.toml");
    std::fs::write(
        &job,
        "seeds = 'seeds.txt'\ndepth = 5\nper-host = 4\nscope = 'any'\ndata = 'out'\ncompression = 'zstd:9'\n",
    )
    .expect("write");
    let a = RunArgs { job: Some(job), depth: Some(1), ..RunArgs::default() };
    let c = CrawlConfig::from_sources(&a).expect("config");
    assert_eq!(c.depth, 1, "flag wins");
    assert_eq!(c.fetch.per_host, 4, "job value used");
    assert_eq!(c.scope, Scope::Any);
    assert_eq!(c.seeds, dir.path().join("seeds.txt"), "relative to the job file");
    assert_eq!(c.data, dir.path().join("out").display().to_string(), "relative to the job file");
    assert_eq!(c.partitions, 16);
    assert_eq!(c.compression, crate::store::Compression::Zstd(9), "job value used");
    let c = CrawlConfig::from_sources(&args()).expect("config");
    assert_eq!(c.compression, crate::store::Compression::Zstd(1), "the default");
}

#[test]
fn the_shipped_nightly_job_is_valid() {
    let job = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs/nightly.toml");
    let c = CrawlConfig::from_sources(&RunArgs { job: Some(job.clone()), ..RunArgs::default() })
        .expect("jobs/nightly.toml");
    let dir = job.parent().expect("jobs/");
    assert_eq!(c.seeds, dir.join("nightly-seeds.txt"));
    assert_eq!(c.data, dir.join("../data").display().to_string());
    assert_eq!((c.depth, c.fetch.per_host, c.fetch.delay), (3, 2, Duration::from_millis(1000)));
    assert!(crate::seeds::read_seeds(&c.seeds, &c.urls).is_ok_and(|s| !s.urls.is_empty()));
}

#[test]
fn bad_values_name_the_option() {
    let mut a = args();
    a.scope = Some("planet".into());
    let e = CrawlConfig::from_sources(&a).expect_err("bad scope").to_string();
    assert!(e.contains("scope") && e.contains("host, domain, any"), "{e}");
    let e = CrawlConfig::from_sources(&RunArgs::default()).expect_err("missing").to_string();
    assert!(e.contains("seeds"), "{e}");
    let mut a = args();
    a.resolve = vec!["nonsense".into()];
    assert!(CrawlConfig::from_sources(&a).expect_err("bad rule").to_string().contains("resolve"));
    for bad in ["zstd:0", "zstd:23", "gzip", "zstd:x"] {
        let mut a = args();
        a.compression = Some(bad.into());
        let e = CrawlConfig::from_sources(&a).expect_err(bad).to_string();
        assert!(e.contains("compression") && e.contains("zstd:N"), "{e}");
    }
    let mut a = args();
    a.compression = Some("none".into());
    assert_eq!(CrawlConfig::from_sources(&a).expect("none").compression, crate::store::Compression::None);
}

#[test]
fn proxies_come_from_flags_and_the_file_with_their_defaults() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("proxies.txt");
    std::fs::write(&file, "http://127.0.0.1:3129\n# spare\nhttp://u:p@127.0.0.1:3130\n").expect("write");
    let mut a = args();
    a.proxy = vec!["http://127.0.0.1:3128".into()];
    a.proxies = Some(file.clone());
    let p = CrawlConfig::from_sources(&a).expect("ok").fetch.proxy;
    assert_eq!(p.urls, ["http://127.0.0.1:3128", "http://127.0.0.1:3129", "http://127.0.0.1:3130"]);
    let c = p.auth.for_proxy("http://127.0.0.1:3130").expect("the file's credentials, in memory");
    assert_eq!((c.user(), c.password()), ("u", "p"));
    assert_eq!((p.delay, p.concurrency, p.retry), (Duration::ZERO, 16, Duration::from_secs(30)));
    assert!(CrawlConfig::from_sources(&args()).expect("ok").fetch.proxy.urls.is_empty(), "direct by default");
    a.proxy = vec!["socks5://127.0.0.1:1080".into()];
    let e = CrawlConfig::from_sources(&a).expect_err("socks").to_string();
    assert!(e.contains("`proxy`") && e.contains("not supported"), "{e}");
    a.proxy.clear();
    std::fs::write(&file, "http://127.0.0.1:3129\nnot a url\n").expect("write");
    let e = CrawlConfig::from_sources(&a).expect_err("bad line").to_string();
    assert!(e.contains("proxies.txt:2"), "{e}");
    a.proxies = None;
    a.proxy_concurrency = Some(0);
    assert!(CrawlConfig::from_sources(&a).expect_err("0").to_string().contains("proxy-concurrency"));
}

#[tokio::test]
async fn proxy_credentials_stay_in_memory_and_out_of_the_stored_settings() {
    let mut a = args();
    a.proxy = vec!["http://alice-proxyuser:s3cret%2Fpw@127.0.0.1:3128".into()];
    let cfg = CrawlConfig::from_sources(&a).expect("ok");
    assert_eq!(cfg.fetch.proxy.urls, ["http://127.0.0.1:3128"]);
    let c = cfg.fetch.proxy.auth.for_proxy("http://127.0.0.1:3128").expect("in memory");
    assert_eq!((c.user(), c.password()), ("alice-proxyuser", "s3cret/pw"));
    let shown = format!("{cfg:?}");
    assert!(!shown.contains("s3cret") && !shown.contains("alice-proxyuser"), "Debug shows them: {shown}");
    // What a run writes for its units of work, read back as they read it.
    let store = crate::store::Store::open("memory://").expect("store");
    super::settings::RunSettings::of(&cfg).save(&store).await.expect("save");
    let raw = store.get(crate::store::layout::SETTINGS).await.expect("get").expect("written");
    let text = String::from_utf8_lossy(&raw);
    for secret in ["s3cret", "alice-proxyuser"] {
        assert!(!text.contains(secret), "{secret} in state/settings.json: {text}");
    }
    assert!(text.contains("http://127.0.0.1:3128"), "the proxy is still named: {text}");
    let back = super::settings::RunSettings::load(&store).await.expect("load").expect("some");
    assert_eq!(back.fetch.proxy.urls, ["http://127.0.0.1:3128"]);
    assert!(back.fetch.proxy.auth.by_proxy.is_empty(), "a task in another process has none from the store");
    // A task in another process would have none: the executors that run them are refused.
    a.executor = Some("processes".into());
    let e = CrawlConfig::from_sources(&a).expect_err("processes").to_string();
    assert!(e.contains("LAYERCRAWL_PROXY_CREDENTIALS") && !e.contains("s3cret"), "{e}");
    // A bad URL's message does not quote the password either.
    a.executor = None;
    a.proxy = vec!["http://alice-proxyuser:s3cret@127.0.0.1:3128/path".into()];
    let e = CrawlConfig::from_sources(&a).expect_err("path").to_string();
    assert!(e.contains("no path") && !e.contains("s3cret") && !e.contains("alice-proxyuser"), "{e}");
}

#[test]
fn the_ant_order_needs_a_plan() {
    let a = RunArgs { order: Some("ant".into()), ..args() };
    let e = CrawlConfig::from_sources(&a).expect_err("ant without a plan").to_string();
    assert!(e.contains("option `order`") && e.contains("add --plan FILE"), "{e}");
    let a = RunArgs { order: Some("ants".into()), ..args() };
    let e = CrawlConfig::from_sources(&a).expect_err("no such order").to_string();
    assert!(e.contains("allowed best-first, bfs, ant"), "{e}");
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, "threshold = 0.3\n[[group]]\nany = ['wind']\n").expect("write");
    let a = RunArgs { order: Some("ant".into()), plan: Some(plan), ..args() };
    let c = CrawlConfig::from_sources(&a).expect("ant with a plan");
    assert_eq!(c.optimise.order, crate::focus::Order::Ant);
    assert_eq!(super::settings::RunSettings::of(&c).pages.order, crate::focus::Order::Ant, "the map tasks know it");
}

#[test]
fn a_job_file_names_its_knowledge_base_relative_to_itself_and_the_settings_carry_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("j.toml");
    std::fs::write(
        &job,
        "seeds = 'seeds.txt'\ndepth = 1\nentities = 'kb.csv'\nprefer-entities = ['acme', 'city']\nentity-threshold = 0.5\n",
    )
    .expect("write");
    std::fs::write(dir.path().join("kb.csv"), "id,name,type\nacme,Acme Corp,company\nparis,Paris,city\n")
        .expect("write");
    let c = CrawlConfig::from_sources(&RunArgs { job: Some(job.clone()), ..RunArgs::default() }).expect("config");
    let e = c.entities.clone().expect("entities from the job file");
    assert_eq!(e.file, dir.path().join("kb.csv").display().to_string());
    assert_eq!((e.prefer, e.threshold), (vec!["acme".to_string(), "city".to_string()], 0.5));
    assert_eq!(c.extractors.datasets().len(), 2, "entities and relations");
    assert!(super::settings::RunSettings::of(&c).pages.entities.is_some(), "the map tasks get it");
    // A flag wins over the job file: a comma-separated list.
    let a = RunArgs { job: Some(job), prefer_entities: Some("paris".into()), ..RunArgs::default() };
    assert_eq!(CrawlConfig::from_sources(&a).expect("config").entities.expect("entities").prefer, ["paris"]);
    let a = RunArgs { relations: Some("r.txt".into()), ..args() };
    let e = CrawlConfig::from_sources(&a).expect_err("no knowledge base").to_string();
    assert!(e.contains("option `relations`") && e.contains("add --entities FILE"), "{e}");
    let a = RunArgs { entity_threshold: Some(1.5), ..args() };
    assert!(CrawlConfig::from_sources(&a).expect_err("out of range").to_string().contains("entity-threshold"));
}

#[test]
fn allow_private_is_off_all_or_a_list_from_a_flag_or_the_job_file() {
    use crate::fetch::resolve::AllowPrivate;
    let with = |a: Option<Option<String>>| CrawlConfig::from_sources(&RunArgs { allow_private: a, ..args() });
    assert_eq!(with(None).expect("config").fetch.allow_private, AllowPrivate::None);
    assert_eq!(with(Some(None)).expect("config").fetch.allow_private, AllowPrivate::All);
    let only = with(Some(Some("10.1.2.3,127.0.0.0/8".into()))).expect("config").fetch.allow_private;
    assert_eq!(only, AllowPrivate::parse_list("10.1.2.3, 127.0.0.0/8").expect("list"));
    let err = with(Some(Some("10.1.2.3,intranet".into()))).expect_err("not an address");
    assert!(err.to_string().contains("\"intranet\" is neither"), "{err}");
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("j.toml");
    for (text, want) in [
        ("true", AllowPrivate::All),
        ("'10.1.2.3'", AllowPrivate::parse_list("10.1.2.3").expect("list")),
        ("['10.1.2.3', 'fd00::/8']", AllowPrivate::parse_list("10.1.2.3,fd00::/8").expect("list")),
    ] {
        std::fs::write(&job, format!("seeds = 's.txt'\ndepth = 1\nallow-private = {text}\n")).expect("write");
        let c = CrawlConfig::from_sources(&RunArgs { job: Some(job.clone()), ..RunArgs::default() }).expect(text);
        assert_eq!(c.fetch.allow_private, want, "{text}");
    }
}
