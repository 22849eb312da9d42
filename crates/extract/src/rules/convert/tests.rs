//! Unit tests of the module above.

mod exact_tests {
    use super::*;

    #[test]
    fn machine_written_numbers_are_read_as_written() {
        let base = url::Url::parse("http://a.test/").expect("url");
        assert_eq!(convert_exact("2.499", FieldType::Float, None, &base), Ok(Value::Float64(2.499)));
        assert_eq!(convert("2.499", FieldType::Float, None, &base), Ok(Value::Float64(2499.0)), "page text: grouping");
        assert_eq!(convert_exact("12", FieldType::Int, None, &base), Ok(Value::Int64(12)));
        assert_eq!(convert_exact("12.0", FieldType::Int, None, &base), Ok(Value::Int64(12)));
        assert!(convert_exact("1.125", FieldType::Int, None, &base).is_err());
        assert_eq!(
            convert_exact("€ 3,50", FieldType::Float, None, &base),
            Ok(Value::Float64(3.5)),
            "not a plain number"
        );
    }
}

use super::*;

fn base() -> url::Url {
    url::Url::parse("https://shop.example/products/shoe?ref=1").expect("a URL")
}

fn conv(raw: &str, ty: FieldType) -> Result<Value, String> {
    convert(raw, ty, None, &base())
}

fn f(raw: &str) -> f64 {
    match conv(raw, FieldType::Float) {
        Ok(Value::Float64(v)) => v,
        other => panic!("{raw:?}: {other:?}"),
    }
}

fn i(raw: &str) -> i64 {
    match conv(raw, FieldType::Int) {
        Ok(Value::Int64(v)) => v,
        other => panic!("{raw:?}: {other:?}"),
    }
}

#[test]
fn type_names_and_columns() {
    for t in FieldType::ALL {
        assert_eq!(FieldType::parse(t.name()), Some(t));
    }
    assert_eq!(FieldType::parse("integer"), None);
    assert_eq!(FieldType::DateTime.to_string(), "datetime");
    assert_eq!(FieldType::Url.column(false), ColumnType::Utf8);
    assert_eq!(FieldType::String.column(true), ColumnType::Utf8List);
    assert_eq!(FieldType::Int.column(true), ColumnType::Int64List);
    assert_eq!(FieldType::Float.column(false), ColumnType::Float64);
    assert_eq!(FieldType::Bool.column(true), ColumnType::BoolList);
    assert_eq!(FieldType::Date.column(false), ColumnType::Date32);
    assert_eq!(FieldType::Date.column(true), ColumnType::Date32List);
    assert_eq!(FieldType::DateTime.column(false), ColumnType::TimestampMicros);
    assert_eq!(FieldType::DateTime.column(true), ColumnType::TimestampMicrosList);
}

#[test]
fn strings_are_collapsed_and_must_not_be_empty() {
    assert_eq!(conv("  Trail \n\t shoe ", FieldType::String), Ok(Value::Utf8("Trail shoe".into())));
    assert_eq!(conv(" \u{a0}\n ", FieldType::String), Err("empty".into()));
    assert_eq!(conv("", FieldType::Float), Err("empty".into()));
}

#[test]
fn ints_are_the_first_number_without_grouping() {
    assert_eq!(i("12 items"), 12);
    assert_eq!(i("1,299"), 1299);
    assert_eq!(i("1.299"), 1299);
    assert_eq!(i("1'299'000 CHF"), 1_299_000);
    assert_eq!(i("1\u{202f}299 €"), 1299);
    assert_eq!(i("2,000,000 views"), 2_000_000);
    assert_eq!(i("Page 3 of 10"), 3);
    assert_eq!(i("-42"), -42);
    assert_eq!(i("(−7)"), -7);
    assert_eq!(i("SKU-123"), 123, "a hyphen inside a word is no sign");
    assert_eq!(i("1.299,00 €"), 1299, "a fraction of zeros is whole");
    assert_eq!(i("0012"), 12);
    assert_eq!(i("2 100 ml"), 2, "an ordinary space does not group");
    assert_eq!(conv("12.5", FieldType::Int), Err("`12.5` is not an int: it has a fraction".into()));
    assert_eq!(conv("12,5 kg", FieldType::Int), Err("`12,5 kg` is not an int: it has a fraction".into()));
    assert_eq!(conv("Call us", FieldType::Int), Err("`Call us` is not an int".into()));
    assert_eq!(
        conv("99999999999999999999", FieldType::Int),
        Err("`99999999999999999999` is too large for an int".into())
    );
}

#[test]
fn floats_are_the_first_number_whatever_its_decoration() {
    assert_eq!(f("€1,299.00"), 1299.0);
    assert_eq!(f("1.299,00 €"), 1299.0);
    assert_eq!(f("$24.50"), 24.5);
    assert_eq!(f("12,5"), 12.5);
    assert_eq!(f("1,299"), 1299.0);
    assert_eq!(f("1.299"), 1299.0);
    assert_eq!(f("0.299"), 0.299);
    assert_eq!(f("1.2990"), 1.299);
    assert_eq!(f("-3.2e2"), -320.0);
    assert_eq!(f("1.5E-3"), 0.0015);
    assert_eq!(f("4.5 / 5"), 4.5);
    assert_eq!(f("Rated 4.5 out of 5 stars"), 4.5);
    assert_eq!(f("USD 1,234,567.89"), 1_234_567.89);
    assert_eq!(f("1 234 567,89\u{a0}€"), 1.0, "an ordinary space ends the number");
    assert_eq!(f("1\u{a0}234\u{a0}567,89\u{a0}€"), 1_234_567.89);
    assert_eq!(f("CHF 1'299.50"), 1299.5);
    assert_eq!(f(".5 l"), 0.5);
    assert_eq!(f("Price: 19.-"), 19.0);
    assert_eq!(f("-€5"), 5.0, "a sign before the currency is not read");
    assert_eq!(f("12px"), 12.0);
    assert_eq!(f("3e"), 3.0);
    assert_eq!(f("1,2,3"), 1.2, "the longest prefix that is one number");
    assert_eq!(f("1,299,00"), 1299.0);
    assert_eq!(conv("Call us", FieldType::Float), Err("`Call us` is not a float".into()));
    assert_eq!(conv("1e999", FieldType::Float), Err("`1e999` is out of range for a float".into()));
    let long = "Call our friendly team for a quote, any day of the week";
    assert_eq!(conv(long, FieldType::Float), Err("`Call our friendly team for a quote, any …` is not a float".into()));
}

#[test]
fn bools_are_words_and_stock_states() {
    for t in
        ["true", "Yes", "y", "1", "ON", "checked", "In stock", "instock", "https://schema.org/InStock", " in_stock "]
    {
        assert_eq!(conv(t, FieldType::Bool), Ok(Value::Bool(true)), "{t}");
    }
    for t in [
        "false",
        "No",
        "n",
        "0",
        "off",
        "Out of stock",
        "OutOfStock",
        "http://schema.org/OutOfStock",
        "sold out",
        "SoldOut",
    ] {
        assert_eq!(conv(t, FieldType::Bool), Ok(Value::Bool(false)), "{t}");
    }
    assert_eq!(
        conv("maybe", FieldType::Bool),
        Err("`maybe` is not a bool (true/false, yes/no, in stock/out of stock)".into())
    );
}

#[test]
fn dates_are_days_since_1970() {
    let d = |raw: &str, format: Option<&str>| convert(raw, FieldType::Date, format, &base());
    let march_14 = Ok(Value::Date32(20_526));
    assert_eq!(d("1970-01-02", None), Ok(Value::Date32(1)));
    assert_eq!(d("1969-12-31", None), Ok(Value::Date32(-1)));
    for raw in [
        "2026-03-14",
        "20260314",
        "2026-03-14T23:30:00",
        "2026-03-14T23:30:00-05:00",
        "2026-03-14T10:00:00Z",
        "14 March 2026",
        "14th Mar. 2026",
        "March 14, 2026",
        "Sat, 14 Mar 2026 10:00:00 +0100",
        "Saturday, 14 March 2026",
    ] {
        assert_eq!(d(raw, None), march_14, "{raw}");
    }
    assert_eq!(d("14/03/2026", Some("%d/%m/%Y")), march_14);
    assert_eq!(d("14 March 2026", Some("%d %B %Y")), march_14);
    assert_eq!(
        d("2026-14-03", Some("%Y-%m-%d")).map_err(|e| e.split(" (").next().map(str::to_string)),
        Err(Some("`2026-14-03` does not match the format `%Y-%m-%d`".into()))
    );
    assert_eq!(
        d("soon", None),
        Err("`soon` is not a date (e.g. 2026-03-14, 14 March 2026, March 14, 2026; or give a `format`)".into())
    );
    assert!(d("31 February 2026", None).is_err());
    assert!(d("March 2026", None).is_err());
}

#[test]
fn datetimes_are_utc_microseconds() {
    let t = |raw: &str, format: Option<&str>| convert(raw, FieldType::DateTime, format, &base());
    // 2026-03-14T09:30:00Z
    let at = Ok(Value::TimestampMicros(1_773_480_600_000_000));
    for raw in [
        "2026-03-14T09:30:00Z",
        "2026-03-14T10:30:00+01:00",
        "2026-03-14T10:30:00+0100",
        "2026-03-14T09:30:00",
        "2026-03-14 09:30:00",
        "2026-03-14T09:30:00.000Z",
        "Sat, 14 Mar 2026 10:30:00 +0100",
        "14 Mar 2026 09:30:00 GMT",
    ] {
        assert_eq!(t(raw, None), at, "{raw}");
    }
    assert_eq!(t("2026-03-14T09:30:00.123456Z", None), Ok(Value::TimestampMicros(1_773_480_600_123_456)));
    let midnight = Ok(Value::TimestampMicros(1_773_446_400_000_000));
    assert_eq!(t("2026-03-14", None), midnight);
    assert_eq!(t("March 14, 2026", None), midnight);
    assert_eq!(t("14/03/2026 09:30", Some("%d/%m/%Y %H:%M")), at, "UTC without an offset in the format");
    assert_eq!(t("14/03/2026 10:30 +0100", Some("%d/%m/%Y %H:%M %z")), at);
    assert_eq!(t("14/03/2026", Some("%d/%m/%Y")), midnight);
    assert!(t("14/03/2026", Some("%Y-%m-%d")).is_err_and(|e| e.starts_with("`14/03/2026` does not match")));
    assert!(t("yesterday", None).is_err_and(|e| e.starts_with("`yesterday` is not a date and time")));
}

#[test]
fn urls_are_absolute_http() {
    let u = |raw: &str| conv(raw, FieldType::Url);
    assert_eq!(u(" /cart?id=1 "), Ok(Value::Utf8("https://shop.example/cart?id=1".into())));
    assert_eq!(u("boot"), Ok(Value::Utf8("https://shop.example/products/boot".into())));
    assert_eq!(u("//cdn.example/i.jpg"), Ok(Value::Utf8("https://cdn.example/i.jpg".into())));
    assert_eq!(u("HTTP://Other.Example"), Ok(Value::Utf8("http://other.example/".into())));
    assert_eq!(u("mailto:a@b.example"), Err("`mailto:a@b.example` is not an http(s) URL".into()));
    assert_eq!(u("javascript:void(0)"), Err("`javascript:void(0)` is not an http(s) URL".into()));
    assert!(u("http://[::1").is_err_and(|e| e.starts_with("`http://[::1` is not a URL (")));
}
