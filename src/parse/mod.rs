//! Parse stage: charset decoding, title, main text and outlinks of a fetched page.
