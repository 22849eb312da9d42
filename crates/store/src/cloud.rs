//! Object storage backends: `s3://`, `gs://` and `az://` data locations,
//! configured from the environment the way each cloud's own tools are
//! (docs/src/cluster.md):
//!
//! - `s3://bucket/prefix`: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//!   `AWS_SESSION_TOKEN`, `AWS_REGION`, and `AWS_ENDPOINT_URL` for an
//!   S3-compatible store (MinIO, R2, Ceph); an `http://` endpoint is
//!   allowed as given. Instance, pod and web-identity credentials work too.
//! - `gs://bucket/prefix`: `GOOGLE_SERVICE_ACCOUNT` (a key file's path),
//!   `GOOGLE_SERVICE_ACCOUNT_KEY` (its JSON), or the machine's own
//!   credentials.
//! - `az://container/prefix`: `AZURE_STORAGE_ACCOUNT_NAME` with
//!   `AZURE_STORAGE_ACCOUNT_KEY` (or a SAS token, or the pod's workload
//!   identity); `AZURE_STORAGE_USE_EMULATOR=true` for Azurite.
//!
//! Every guarantee of a local folder holds: objects are written whole (a
//! put, or a multipart upload completed at the end), and a create-if-absent
//! put is a conditional request (`If-None-Match: *`), so two attempts of one
//! step never both commit.

use std::sync::Arc;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::prefix::PrefixStore;
use object_store::ObjectStore;

use super::StoreError;

/// The object store behind `location` (a URL whose scheme is not `file`
/// or `memory`), rooted at its prefix, configured from the environment and
/// then from `options`, which win: each a setting named as its environment
/// variable is (`AWS_ENDPOINT_URL`, `AZURE_STORAGE_ACCOUNT_KEY`, in any
/// case) or as the object store library's own key (`endpoint`,
/// `allow_http`).
pub(super) fn open(location: &str, options: &[(String, String)]) -> Result<Arc<dyn ObjectStore>, StoreError> {
    let err = |reason: String| StoreError::Open { location: location.to_string(), reason };
    let url = url::Url::parse(location).map_err(|e| err(format!("not a URL: {e}")))?;
    let scheme = url.scheme();
    let supported = "use a local folder, file://, s3://, gs://, az:// or memory://";
    if !matches!(scheme, "s3" | "gs" | "az") {
        return Err(err(format!("the `{scheme}://` scheme is not supported; {supported}")));
    }
    let bucket = url
        .host_str()
        .filter(|b| !b.is_empty())
        .ok_or_else(|| err(format!("no bucket or container after `{scheme}://` (e.g. {scheme}://bucket/prefix)")))?;
    let unknown = |key: &str| err(format!("`{key}` is no setting of {scheme}:// (docs/src/cluster.md)"));
    super::tls::install_provider();
    let built: Result<Arc<dyn ObjectStore>, object_store::Error> = match scheme {
        "s3" => {
            let mut b =
                configured(AmazonS3Builder::from_env().with_bucket_name(bucket), options, AmazonS3Builder::with_config)
                    .map_err(|key| unknown(&key))?;
            // An endpoint given as `http://` is taken as given.
            if b.get_config_value(&AmazonS3ConfigKey::Endpoint).is_some_and(|e| e.starts_with("http://")) {
                b = b.with_allow_http(true);
            }
            b.build().map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
        }
        "gs" => {
            let b = configured(
                GoogleCloudStorageBuilder::from_env().with_bucket_name(bucket),
                options,
                GoogleCloudStorageBuilder::with_config,
            )
            .map_err(|key| unknown(&key))?;
            b.build().map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
        }
        _ => {
            let b = configured(
                MicrosoftAzureBuilder::from_env().with_container_name(bucket),
                options,
                MicrosoftAzureBuilder::with_config,
            )
            .map_err(|key| unknown(&key))?;
            b.build().map(|s| Arc::new(s) as Arc<dyn ObjectStore>)
        }
    };
    let store =
        built.map_err(|e| err(format!("{e}. Check the {} settings (docs/src/cluster.md)", env_family(scheme))))?;
    let prefix = url.path().trim_matches('/');
    Ok(if prefix.is_empty() { store } else { Arc::new(PrefixStore::new(store, prefix)) })
}

/// `builder` with each of `options` set through `set`, its key parsed as
/// the store's own (lowercase, as its environment variable's name is); the
/// first key the store does not know, as given, is the error.
fn configured<B, K: std::str::FromStr>(
    mut builder: B,
    options: &[(String, String)],
    set: impl Fn(B, K, String) -> B,
) -> Result<B, String> {
    for (key, value) in options {
        let parsed = key.to_ascii_lowercase().parse().map_err(|_| key.clone())?;
        builder = set(builder, parsed, value.clone());
    }
    Ok(builder)
}

fn env_family(scheme: &str) -> &'static str {
    match scheme {
        "s3" => "AWS_*",
        "gs" => "GOOGLE_*",
        _ => "AZURE_*",
    }
}

#[cfg(test)]
mod tests {
    use super::open;

    #[test]
    fn a_location_without_a_bucket_is_refused_by_name() {
        let err = open("s3:///prefix", &[]).expect_err("no bucket");
        assert!(err.to_string().contains("no bucket"), "{err}");
        let err = open("ftp://host/x", &[]).expect_err("unknown scheme");
        assert!(err.to_string().contains("`ftp://`"), "{err}");
    }

    #[test]
    fn a_setting_no_store_knows_is_refused_by_name() {
        let options = [("AWS_ENDPOINT_URLL".to_string(), "http://127.0.0.1:9".to_string())];
        let err = open("s3://bucket/prefix", &options).expect_err("unknown setting");
        assert!(err.to_string().contains("`AWS_ENDPOINT_URLL` is no setting of s3://"), "{err}");
    }
}
