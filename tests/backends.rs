//! The backend conformance suite (`store::conformance`: plain objects,
//! create-if-absent under a race, shards, attempts and their one commit,
//! concatenation by ranged reads) against real object stores on loopback: moto's S3
//! server and Azurite. One test in this binary, so that the environment
//! that configures the stores (AWS_*, AZURE_*) is set once, before any
//! store is opened, as a user would set it.

#[path = "e2e/common/mod.rs"]
mod common;

use common::objstores::{Kind, Server};
use layercrawl::store::{conformance, Store};

#[test]
fn object_stores_keep_every_guarantee_of_a_local_folder() {
    let (s3, az) = (Server::start(Kind::S3), Server::start(Kind::Azure));
    let urls = [s3.bucket("conformance", "suite"), az.bucket("conformance", "suite")];
    for (key, value) in s3.env().into_iter().chain(az.env()) {
        std::env::set_var(key, value);
    }
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // moto's S3 server does not serialise conditional replaces (S3 does):
    // there the replacing writers go one after the other.
    for (url, at_once) in urls.into_iter().zip([false, true]) {
        let store = Store::open(&url).unwrap_or_else(|e| panic!("open {url}: {e}"));
        runtime.block_on(conformance::check(&store, at_once));
        eprintln!("{url}: ok");
    }
}
