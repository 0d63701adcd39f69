use super::json::least_cost;
use super::*;
use crate::outputs::measure::tokens;
use proptest::prelude::*;
use serde_json::Value;

/// True when `cut` is `whole` with some arrays' trailing elements dropped (the last kept
/// one maybe cut the same way).
fn only_arrays_shorter(whole: &Value, cut: &Value) -> bool {
    match (whole, cut) {
        (Value::Object(w), Value::Object(c)) => {
            w.len() == c.len()
                && w.iter()
                    .zip(c)
                    .all(|((wk, wv), (ck, cv))| wk == ck && only_arrays_shorter(wv, cv))
        }
        (Value::Array(w), Value::Array(c)) => {
            c.len() <= w.len() && w.iter().zip(c).all(|(wv, cv)| only_arrays_shorter(wv, cv))
        }
        (w, c) => w == c,
    }
}

/// Any JSON value up to a few levels deep, with non-ASCII strings.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-zé日🙂 ,\n]{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 200, 12, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..12).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the text and budget: a prefix, on a character boundary, within the
    /// budget, after a whole line unless the first line alone is over.
    #[test]
    fn text_cuts_are_clean_prefixes(text in "[a-zé日🙂 \n]{0,3000}", limit in 1usize..200) {
        if let Some(cut) = cut_text(&text, limit) {
            prop_assert!(text.is_char_boundary(cut.end));
            prop_assert!(tokens(&text[..cut.end]) <= limit);
            if cut.is_mid_line {
                prop_assert!(!text[..cut.end].contains('\n'));
            } else {
                prop_assert!(text[..cut.end].ends_with('\n'));
                prop_assert_eq!(count_lines(&text.as_bytes()[..cut.end]), cut.kept_lines);
            }
        } else {
            prop_assert!(tokens(&text) <= limit || text.split_inclusive('\n').count() > 1);
        }
    }

    /// Whatever the value and budget: an arrays-only cut is within the budget and keeps
    /// every object member and every string (or says it cannot).
    #[test]
    fn arrays_only_cuts_drop_only_array_elements(value in any_json(), limit in 8usize..300) {
        match cut_json_arrays(&value, limit) {
            ArraysCut::Fits => prop_assert!(tokens(&value.to_string()) <= limit),
            ArraysCut::Over => prop_assert!(least_cost(&value) > limit / 2, "{value}"),
            ArraysCut::Cut(cut) => {
                prop_assert!(tokens(&cut.value.to_string()) <= limit);
                prop_assert!(only_arrays_shorter(&value, &cut.value), "{value} -> {}", cut.value);
            }
        }
    }

    /// Whatever the value and budget: what is kept is valid JSON within the budget.
    #[test]
    fn json_cuts_stay_valid_and_within(value in any_json(), limit in 8usize..300) {
        if let Some(cut) = cut_json(&value, limit) {
            let text = cut.value.to_string();
            prop_assert!(serde_json::from_str::<Value>(&text).is_ok());
            prop_assert!(tokens(&text) <= limit, "{} > {limit}: {text}", tokens(&text));
        } else {
            prop_assert!(tokens(&value.to_string()) <= limit);
        }
    }
}
