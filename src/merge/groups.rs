//! What both ways of concatenating shards ([`super::concat`] over object
//! storage, [`super::splice`] in a local folder) read from the inputs'
//! footers: that their schemas agree, and where a row group's bytes lie.

use parquet::file::metadata::ParquetMetaData;

use crate::store::StoreError;

/// Refuses inputs whose schemas differ from the first one's (or no inputs).
pub(crate) fn check_schemas(inputs: &[String], metas: &[&ParquetMetaData], output: &str) -> Result<(), StoreError> {
    let Some(first) = metas.first() else {
        return Err(StoreError::Schema { path: output.to_string(), reason: "nothing to concatenate".into() });
    };
    let schema = first.file_metadata().schema_descr().root_schema_ptr();
    for (input, meta) in inputs.iter().zip(metas) {
        if meta.file_metadata().schema_descr().root_schema_ptr() != schema {
            return Err(StoreError::Schema {
                path: input.clone(),
                reason: format!("its schema differs from {}'s", inputs[0]),
            });
        }
    }
    Ok(())
}

pub(crate) use crate::store::chunks::chunk_range;
