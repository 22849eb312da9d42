//! The SQL writers' place in a build without the cargo feature `sql`:
//! [`super::Destination::parse`] refuses every destination ([`super::BUILT`]
//! is false), so no writer is ever opened.

/// PostgreSQL: no destination is accepted in this build.
pub mod postgres {
    use crate::error::NotBuilt;
    use crate::export::{Chunk, ExportError, Loaded};

    /// A PostgreSQL destination (never made in this build).
    #[derive(Clone, Debug)]
    pub struct Target {
        pub name: String,
    }

    #[must_use]
    pub fn is_key_value(_: &str) -> bool {
        false
    }

    /// # Errors
    /// Always: this build has no PostgreSQL client.
    pub fn parse(_: &str, _: &dyn Fn(&str) -> Option<String>) -> Result<Target, String> {
        Err(NotBuilt::new("layercrawl export", "sql").to_string())
    }

    /// The destination with any password hidden: all of it, in this build.
    #[must_use]
    pub fn redact(_: &str) -> String {
        "***".into()
    }

    /// A PostgreSQL database being written: none can be in this build.
    pub enum Writer {}

    impl Writer {
        /// # Errors
        /// Always: this build has no PostgreSQL client.
        pub async fn open(_: &Target) -> Result<Self, ExportError> {
            Err(NotBuilt::new("layercrawl export", "sql").into())
        }

        /// # Errors
        /// None: no `Writer` exists in this build.
        pub async fn write(&mut self, _: Chunk) -> Result<(), ExportError> {
            match *self {}
        }

        /// # Errors
        /// None: no `Writer` exists in this build.
        pub async fn finish(self) -> Result<Loaded, ExportError> {
            match self {}
        }
    }
}

/// SQLite: no database is opened in this build.
pub mod sqlite {
    use std::path::PathBuf;

    use crate::error::NotBuilt;
    use crate::export::{Chunk, ExportError, Loaded};

    /// A SQLite database being written: none can be in this build.
    pub enum Writer {}

    impl Writer {
        /// # Errors
        /// Always: this build has no SQLite.
        pub async fn open(_: PathBuf, _: String) -> Result<Self, ExportError> {
            Err(NotBuilt::new("layercrawl export", "sql").into())
        }

        /// # Errors
        /// None: no `Writer` exists in this build.
        pub async fn write(&mut self, _: Chunk) -> Result<(), ExportError> {
            match *self {}
        }

        /// # Errors
        /// None: no `Writer` exists in this build.
        pub async fn finish(self) -> Result<Loaded, ExportError> {
            match self {}
        }
    }
}
