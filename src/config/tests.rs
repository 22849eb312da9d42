use super::*;

fn args() -> RunOptions {
    RunOptions { seeds: Some("s.txt".into()), depth: Some(2), ..RunOptions::default() }
}

fn job(path: &std::path::Path) -> RunOptions {
    RunOptions { job: Some(path.to_path_buf()), ..RunOptions::default() }
}

/// The flags as a command line gives them, over the job file they name.
fn command_line(argv: &[&str]) -> Result<CrawlConfig, ConfigError> {
    use clap::{Args as _, FromArgMatches as _};
    let matches = RunOptions::augment_args(clap::Command::new("run")).try_get_matches_from(argv).expect("flags parse");
    let flags = RunOptions::from_arg_matches(&matches).expect("flags");
    CrawlConfig::from_options(&flags.with_job(&Given::Matches(&matches))?)
}

#[test]
fn a_job_file_names_its_rules_relative_to_itself_and_bad_rules_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job_path = dir.path().join("j.toml");
    std::fs::write(&job_path, "seeds = 'seeds.txt'\ndepth = 1\nrules = 'r.toml'\n").expect("write");
    let rules = dir.path().join("r.toml");
    std::fs::write(&rules, "[[rule]]\nname = 'p'\nurls = ['**']\n[[rule.field]]\nname = 't'\ncss = 'h1'\n")
        .expect("write");
    let c = CrawlConfig::from_sources(&job(&job_path)).expect("config");
    let src = c.rules.expect("rules from the job file");
    assert_eq!(src.file, rules.display().to_string());
    assert_eq!(src.compile().expect("valid").list[0].name, "p");
    std::fs::write(
        &rules,
        "[[rule]]\nname = 'p'\nurls = ['**']\n[[rule.field]]\nname = 't'\ncss = 'h1'\ntype = 'money'\n",
    )
    .expect("write");
    let err = CrawlConfig::from_sources(&job(&job_path)).expect_err("bad rules");
    assert!(matches!(err, ConfigError::Rules(_)));
    assert!(err.to_string().contains("r.toml:7:8: type `money`"), "{err}");
}

#[test]
fn flags_win_over_job_and_defaults_apply() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job_path = dir.path().join("j.toml");
    std::fs::write(
        &job_path,
        "seeds = 'seeds.txt'\ndepth = 5\nper-host = 4\nscope = 'any'\ndata = 'out'\ncompression = 'zstd:9'\n",
    )
    .expect("write");
    let c = command_line(&["run", "--job", job_path.to_str().expect("utf-8"), "--depth", "1"]).expect("config");
    assert_eq!(c.depth, 1, "flag wins");
    assert_eq!(c.fetch.politeness.per_host, 4, "job value used");
    assert_eq!(c.scope, Scope::Any);
    assert_eq!(c.seeds, dir.path().join("seeds.txt"), "relative to the job file");
    assert_eq!(c.data, dir.path().join("out").display().to_string(), "relative to the job file");
    assert_eq!(c.partitions, 16);
    assert_eq!(c.compression, crate::store::Compression::Zstd(9), "job value used");
    let c = command_line(&["run", "--job", job_path.to_str().expect("utf-8"), "--scope", "domain"]).expect("config");
    assert_eq!(c.scope, Scope::Domain, "a flag given wins even with the default value");
    let c = CrawlConfig::from_sources(&args()).expect("config");
    assert_eq!(c.compression, crate::store::Compression::Zstd(1), "the default");
}

#[test]
fn the_shipped_nightly_job_is_valid() {
    let job_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs/nightly.toml");
    let c = CrawlConfig::from_sources(&job(&job_path)).expect("jobs/nightly.toml");
    let dir = job_path.parent().expect("jobs/");
    assert_eq!(c.seeds, dir.join("nightly-seeds.txt"));
    assert_eq!(c.data, dir.join("../data").display().to_string());
    assert_eq!(
        (c.depth, c.fetch.politeness.per_host, c.fetch.politeness.min_delay()),
        (3, 2, Duration::from_millis(1000))
    );
    assert!(crate::seeds::read_seeds(&c.seeds, &c.urls).is_ok_and(|s| !s.urls.is_empty()));
}

/// A value that parses alone but is out of range, or that needs another
/// option, is named by the check; one that does not parse, by clap or the
/// job file's reader.
#[test]
fn bad_values_name_the_option() {
    let e = command_line(&["run", "--seeds", "s.txt", "--depth", "1", "--partitions", "0"]).expect_err("0");
    assert!(e.to_string().contains("option `partitions`: 0; allowed 1..=100000"), "{e}");
    let e = CrawlConfig::from_sources(&RunOptions::default()).expect_err("missing").to_string();
    assert!(e.contains("seeds"), "{e}");
    let dir = tempfile::tempdir().expect("tempdir");
    let job_path = dir.path().join("j.toml");
    for (text, says) in [
        ("scope = 'planet'", "key `scope`"),
        ("resolve = ['nonsense']", "resolve rule \"nonsense\""),
        ("compression = 'zstd:23'", "zstd:N with N in 1..=22"),
        ("max-memory = '2 bananas'", "key `max-memory`"),
        ("cpu-target = 150", "\"150\" is not a percentage"),
        ("max-pages = 0", "option `max-pages`: must be at least 1"),
    ] {
        std::fs::write(&job_path, format!("seeds = 's.txt'\ndepth = 1\n{text}\n")).expect("write");
        let e = CrawlConfig::from_sources(&job(&job_path)).expect_err(text).to_string();
        assert!(e.contains(says), "{text}: {e}");
        if !says.starts_with("option") {
            assert!(e.contains("j.toml") && e.contains("line 3"), "names the file and line: {e}");
        }
    }
    let mut a = args();
    a.output.compression = "none".parse().expect("none");
    assert_eq!(CrawlConfig::from_sources(&a).expect("none").compression, crate::store::Compression::None);
    let mut a = args();
    a.limits.max_memory = Some("512M".parse().expect("size"));
    assert_eq!(CrawlConfig::from_sources(&a).expect("ok").fetch.governor.max_memory, Some(512 << 20));
}

#[test]
fn proxies_come_from_flags_and_the_file_with_their_defaults() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("proxies.txt");
    std::fs::write(&file, "http://127.0.0.1:3129\n# spare\nhttp://u:p@127.0.0.1:3130\n").expect("write");
    let mut a = args();
    a.network.proxy = vec!["http://127.0.0.1:3128".into()];
    a.network.proxies = Some(file.clone());
    let p = CrawlConfig::from_sources(&a).expect("ok").fetch.proxy;
    assert_eq!(p.urls, ["http://127.0.0.1:3128", "http://127.0.0.1:3129", "http://127.0.0.1:3130"]);
    let c = p.auth.for_proxy("http://127.0.0.1:3130").expect("the file's credentials, in memory");
    assert_eq!((c.user(), c.password()), ("u", "p"));
    assert_eq!((p.delay, p.concurrency, p.retry), (Duration::ZERO, 16, Duration::from_secs(30)));
    assert!(CrawlConfig::from_sources(&args()).expect("ok").fetch.proxy.urls.is_empty(), "direct by default");
    a.network.proxy = vec!["socks5://127.0.0.1:1080".into()];
    let e = CrawlConfig::from_sources(&a).expect_err("socks").to_string();
    assert!(e.contains("`proxy`") && e.contains("not supported"), "{e}");
    a.network.proxy.clear();
    std::fs::write(&file, "http://127.0.0.1:3129\nnot a url\n").expect("write");
    let e = CrawlConfig::from_sources(&a).expect_err("bad line").to_string();
    assert!(e.contains("proxies.txt:2"), "{e}");
    a.network.proxies = None;
    a.network.proxy_concurrency = 0;
    assert!(CrawlConfig::from_sources(&a).expect_err("0").to_string().contains("proxy-concurrency"));
}
#[tokio::test]
async fn proxy_credentials_stay_in_memory_and_out_of_the_stored_settings() {
    let mut a = args();
    a.network.proxy = vec!["http://alice-proxyuser:s3cret%2Fpw@127.0.0.1:3128".into()];
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
    a.executors.executor = ExecutorKind::Processes;
    let e = CrawlConfig::from_sources(&a).expect_err("processes").to_string();
    assert!(e.contains("LAYERCRAWL_PROXY_CREDENTIALS") && !e.contains("s3cret"), "{e}");
    // A bad URL's message does not quote the password either.
    a.executors.executor = ExecutorKind::Local;
    a.network.proxy = vec!["http://alice-proxyuser:s3cret@127.0.0.1:3128/path".into()];
    let e = CrawlConfig::from_sources(&a).expect_err("path").to_string();
    assert!(e.contains("no path") && !e.contains("s3cret") && !e.contains("alice-proxyuser"), "{e}");
}

#[test]
fn the_ant_order_needs_a_plan() {
    let mut a = args();
    a.focus.order = crate::focus::Order::Ant;
    let e = CrawlConfig::from_sources(&a).expect_err("ant without a plan").to_string();
    assert!(e.contains("option `order`") && e.contains("add --plan FILE"), "{e}");
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, "threshold = 0.3\n[[group]]\nany = ['wind']\n").expect("write");
    a.focus.plan = Some(plan);
    let c = CrawlConfig::from_sources(&a).expect("ant with a plan");
    assert_eq!(c.optimise.order, crate::focus::Order::Ant);
    assert_eq!(super::settings::RunSettings::of(&c).optimise.order, crate::focus::Order::Ant, "the tasks know it");
}

#[test]
fn a_job_file_names_its_knowledge_base_relative_to_itself_and_the_settings_carry_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job_path = dir.path().join("j.toml");
    std::fs::write(
        &job_path,
        "seeds = 'seeds.txt'\ndepth = 1\nentities = 'kb.csv'\nprefer-entities = ['acme', 'city']\nentity-threshold = 0.5\n",
    )
    .expect("write");
    std::fs::write(dir.path().join("kb.csv"), "id,name,type\nacme,Acme Corp,company\nparis,Paris,city\n")
        .expect("write");
    let c = CrawlConfig::from_sources(&job(&job_path)).expect("config");
    let e = c.entities.clone().expect("entities from the job file");
    assert_eq!(e.file, dir.path().join("kb.csv").display().to_string());
    assert_eq!((e.prefer, e.threshold), (vec!["acme".to_string(), "city".to_string()], 0.5));
    assert_eq!(c.extractors.datasets().len(), 2, "entities and relations");
    assert!(super::settings::RunSettings::of(&c).pages.entities.is_some(), "the map tasks get it");
    // A flag wins over the job file: a comma-separated list.
    let argv = ["run", "--job", job_path.to_str().expect("utf-8"), "--prefer-entities", "paris"];
    assert_eq!(command_line(&argv).expect("config").entities.expect("entities").prefer, ["paris"]);
    let mut a = args();
    a.focus.relations = Some("r.txt".into());
    let e = CrawlConfig::from_sources(&a).expect_err("no knowledge base").to_string();
    assert!(e.contains("option `relations`") && e.contains("add --entities FILE"), "{e}");
    let mut a = args();
    a.focus.entity_threshold = 1.5;
    assert!(CrawlConfig::from_sources(&a).expect_err("out of range").to_string().contains("entity-threshold"));
}

#[test]
fn allow_private_is_off_all_or_a_list_from_a_flag_or_the_job_file() {
    use crate::fetch::resolve::AllowPrivate;
    let with = |flags: &[&str]| {
        let argv: Vec<&str> = ["run", "--seeds", "s.txt", "--depth", "1"].iter().chain(flags).copied().collect();
        command_line(&argv)
    };
    assert_eq!(with(&[]).expect("config").fetch.allow_private, AllowPrivate::None);
    assert_eq!(with(&["--allow-private"]).expect("config").fetch.allow_private, AllowPrivate::All);
    let only = with(&["--allow-private", "10.1.2.3,127.0.0.0/8"]).expect("config").fetch.allow_private;
    assert_eq!(only, AllowPrivate::parse_list("10.1.2.3, 127.0.0.0/8").expect("list"));
    assert_eq!(only.to_string().parse::<AllowPrivate>(), Ok(only), "prints as it parses");
    let err = "10.1.2.3,intranet".parse::<AllowPrivate>().expect_err("not an address");
    assert!(err.contains("\"intranet\" is neither"), "{err}");
    let dir = tempfile::tempdir().expect("tempdir");
    let job_path = dir.path().join("j.toml");
    for (text, want) in [
        ("true", AllowPrivate::All),
        ("'10.1.2.3'", AllowPrivate::parse_list("10.1.2.3").expect("list")),
        ("['10.1.2.3', 'fd00::/8']", AllowPrivate::parse_list("10.1.2.3,fd00::/8").expect("list")),
    ] {
        std::fs::write(&job_path, format!("seeds = 's.txt'\ndepth = 1\nallow-private = {text}\n")).expect("write");
        let c = CrawlConfig::from_sources(&job(&job_path)).expect(text);
        assert_eq!(c.fetch.allow_private, want, "{text}");
    }
}

/// `state/settings.json` holds each setting once; what two stages share is
/// handed to both when it is read back.
#[tokio::test]
async fn each_setting_is_written_once_and_read_back_into_every_stage() {
    let mut a = args();
    a.noise.strip_params = "sessionid,ref_*".parse().expect("list");
    a.output.warc = true;
    a.focus.order = crate::focus::Order::Bfs;
    let cfg = CrawlConfig::from_sources(&a).expect("config");
    let store = crate::store::Store::open("memory://").expect("store");
    super::settings::RunSettings::of(&cfg).save(&store).await.expect("save");
    let raw = store.get(crate::store::layout::SETTINGS).await.expect("get").expect("written");
    let text = String::from_utf8_lossy(&raw);
    for (value, what) in
        [("ref_*", "the stripped parameters"), ("\"bfs\"", "the order"), ("\"drop\"", "the noise filter")]
    {
        assert_eq!(text.matches(value).count(), 1, "{what} written once: {text}");
    }
    assert!(!text.contains("capture"), "--warc is written once, as pages.warc: {text}");
    let back = super::settings::RunSettings::load(&store).await.expect("load").expect("some");
    assert_eq!(back.pages.parse.urls.stripped(), ["sessionid", "ref_*"], "the parse's");
    assert_eq!(back.fetch.urls.stripped(), ["sessionid", "ref_*"], "the fetcher's redirects'");
    assert!(back.fetch.capture && back.pages.warc, "the fetcher captures for the archive");
}

#[test]
fn the_lease_expiry_is_kept_within_its_range() {
    use crate::config::values::Span;
    let mut a = args();
    assert_eq!(CrawlConfig::from_sources(&a).expect("ok").lease_expiry, crate::store::lease::EXPIRY);
    a.executors.lease_expiry = Span(Duration::from_secs(12));
    assert_eq!(CrawlConfig::from_sources(&a).expect("ok").lease_expiry, Duration::from_secs(12));
    for bad in [Duration::from_secs(5), Duration::from_secs(3601)] {
        a.executors.lease_expiry = Span(bad);
        let e = CrawlConfig::from_sources(&a).expect_err("out of range").to_string();
        assert!(e.contains("lease-expiry") && e.contains("6s to 1h"), "{e}");
    }
}
