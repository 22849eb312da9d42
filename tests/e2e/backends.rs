//! The backend conformance suite (`store::conformance`: plain objects,
//! create-if-absent under a race, shards, attempts and their one commit,
//! concatenation by ranged reads) against real object stores on loopback:
//! moto's S3 server and Azurite. Their settings are given to
//! `Store::open_with`, not set in this process's environment, which the
//! other tests' crawls read.

use crate::common;

use common::objstores::{Kind, Server};
use layercrawl::store::{conformance, Store};

#[test]
fn object_stores_keep_every_guarantee_of_a_local_folder() {
    let (s3, az) = (Server::start(Kind::S3), Server::start(Kind::Azure));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // moto's S3 server does not serialise conditional replaces (S3 does):
    // there the replacing writers go one after the other.
    for (server, at_once) in [(&s3, false), (&az, true)] {
        let url = server.bucket("conformance", "suite");
        let store = Store::open_with(&url, &server.options()).unwrap_or_else(|e| panic!("open {url}: {e}"));
        runtime.block_on(conformance::check(&store, at_once));
        eprintln!("{url}: ok");
    }
}
