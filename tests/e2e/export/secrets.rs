//! Passwords that hold a URL's delimiters (`/ ? # @ :`), as they are, percent-encoded,
//! or quoted in a `key=value` string: the server gets the whole password, no output
//! shows any of it. And `sslmode=require` with a root certificate at hand checks the
//! server's CA, as libpq does.

use super::postgres::{Postgres, PW_USER};
use super::{export_as_user, files_containing};
use crate::common::Web;
use testweb::FarmConfig;

/// A password with every delimiter of a URL, and its percent-encoded form.
const DELIMITED: &str = "Pa/ss?x#y@z:w-58c1";
const ENCODED: &str = "Pa%2Fss%3Fx%23y%40z%3Aw-58c1";
/// The pieces of it that a wrong split would print.
const PIECES: [&str; 4] = ["Pa/ss", "ss?x", "y@z", "z:w-58c1"];

#[test]
fn passwords_with_url_delimiters_work_and_are_never_shown() {
    let server = Postgres::start(false);
    server.create_db_of_pw_user("pw");
    server.query("postgres", &format!("ALTER ROLE {PW_USER} PASSWORD '{DELIMITED}'"));
    let web = Web::start(FarmConfig { sites: 1, pages: 8, faults: false, ..FarmConfig::default() });
    let (data, cwd) = (web.dir("data"), web.dir("cwd"));
    std::fs::create_dir_all(&cwd).expect("mkdir");
    web.crawl(&data, 1, &["--delay", "0"]);
    let port = server.port;
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let mut outputs = Vec::new();
    let mut run = |to: &str, json: bool, want: i32| {
        let (code, out, err) = export_as_user(&cwd, &data, to, &[], json);
        assert_eq!(code, want, "--to {to}:\n{out}\n{err}");
        outputs.push((to.to_string(), format!("{out}\n{err}")));
        (out, err)
    };

    // The right password, written three ways: the server takes it.
    for to in [
        format!("postgres://{PW_USER}:{DELIMITED}@127.0.0.1:{port}/pw"),
        format!("postgres://{PW_USER}:{ENCODED}@127.0.0.1:{port}/pw?application_name=a@b"),
        format!("host=127.0.0.1 port={port} user={PW_USER} dbname=pw password='{DELIMITED}'"),
    ] {
        let (out, _) = run(&to, false, 0);
        assert!(out.contains("***"), "shown redacted: {out}");
        let (out, _) = run(&to, true, 0);
        let summary: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
        assert!(summary["to"].as_str().is_some_and(|t| t.contains("***")), "{summary}");
    }
    // A wrong one, and a server that is not there: the errors name the
    // destination, redacted.
    let wrong = DELIMITED.replace("58c1", "0000");
    let (_, err) = run(&format!("postgres://{PW_USER}:{wrong}@127.0.0.1:{port}/pw"), false, 1);
    assert!(err.contains("password authentication failed") && err.contains("***"), "{err}");
    for to in [
        format!("postgres://me:{DELIMITED}@127.0.0.1:{free}/db"),
        format!("postgres://me:{ENCODED}@127.0.0.1:{free}/db"),
        format!("host=127.0.0.1 port={free} user=me dbname=db password='{DELIMITED}'"),
    ] {
        let (_, err) = run(&to, false, 1);
        assert!(err.contains("cannot reach the database") && err.contains("***"), "{err}");
        eprintln!("{err}");
    }
    // A bad setting after the password.
    let (_, err) = run(&format!("postgres://me:{DELIMITED}@127.0.0.1:{port}/pw?sslmode=bogus"), false, 2);
    assert!(err.contains("bogus") && err.contains("***"), "{err}");

    for (to, text) in &outputs {
        for secret in PIECES.iter().chain([&ENCODED, &"0000"]) {
            assert!(!text.contains(secret), "--to {to} printed {secret:?}:\n{text}");
        }
    }
    for dir in [&cwd, &data] {
        assert!(files_containing(dir, "58c1").is_empty(), "a file holds the password");
    }
}

#[test]
fn require_with_a_root_certificate_checks_the_servers_ca() {
    let server = Postgres::start(false);
    server.create_db("crawl");
    let web = Web::start(FarmConfig { sites: 1, pages: 8, faults: false, ..FarmConfig::default() });
    let (data, cwd) = (web.dir("data"), web.dir("cwd"));
    std::fs::create_dir_all(cwd.join(".postgresql")).expect("mkdir");
    web.crawl(&data, 1, &["--delay", "0"]);
    let (ca, wrong) = (server.tls.join("ca.crt"), server.tls.join("other-ca.crt"));
    let base = format!("{}?sslmode=require", server.url("crawl"));

    // No CA at hand: encrypted, the certificate taken as it is.
    let (code, _, err) = export_as_user(&cwd, &data, &base, &[], false);
    assert_eq!(code, 0, "{err}");
    // A CA that did not sign the server's certificate, given or in
    // ~/.postgresql/root.crt ($HOME is `cwd`): refused.
    let given = format!("{base}&sslrootcert={}", wrong.display());
    let (code, _, err) = export_as_user(&cwd, &data, &given, &[], false);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("invalid peer certificate") && err.contains("sslmode=verify-ca"), "{err}");
    let root = cwd.join(".postgresql/root.crt");
    std::fs::copy(&wrong, &root).expect("copy");
    let (code, _, err) = export_as_user(&cwd, &data, &base, &[], false);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&format!("was not signed by a CA in sslrootcert {}", root.display())), "{err}");
    // The CA that signed it: accepted.
    std::fs::copy(&ca, &root).expect("copy");
    let (code, _, err) = export_as_user(&cwd, &data, &base, &[], false);
    assert_eq!(code, 0, "{err}");
}
