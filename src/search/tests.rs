//! Behaviour of the whole module: ranking rules, the three methods, the server filter,
//! persistence, and the evaluation targets on `tests/fixtures/search`.

use serde_json::json;

use super::*;

/// A tool from a name, a description and parameters `(name, description)`.
fn tool(server: &str, name: &str, description: &str, params: &[(&str, &str)]) -> ToolDoc {
    let properties: serde_json::Map<String, serde_json::Value> = params
        .iter()
        .map(|(p, d)| (p.to_string(), json!({"type": "string", "description": d})))
        .collect();
    let definition = json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties},
    });
    ToolDoc::from_definition(server, &definition)
}

fn catalog() -> SearchIndex {
    SearchIndex::build(vec![
        tool(
            "github",
            "get_file_contents",
            "Get the contents of a file from a repository.",
            &[("owner", "Repository owner"), ("path", "Path to the file")],
        ),
        tool(
            "notes",
            "summarize",
            "Get file contents, get file contents summary: get the file contents of notes.",
            &[],
        ),
        tool(
            "github",
            "create_pull_request",
            "Open a new PR from a head branch.",
            &[("head", "Branch with the changes")],
        ),
        tool(
            "gitlab",
            "create_issue",
            "Create a new issue in a project.",
            &[],
        ),
        tool(
            "github",
            "create_issue",
            "Create a new issue in a repository.",
            &[],
        ),
        tool("files", "delete_file", "Delete a file from disk.", &[]),
        tool("files", "remove_item", "Remove an item from the list.", &[]),
        tool("files", "delete_item", "Delete an item from the list.", &[]),
        tool(
            "time",
            "now",
            "What the clock says.",
            &[("timezone", "IANA name, e.g. Europe/Paris")],
        ),
        tool(
            "weather",
            "forecast",
            "Weather for the next days.",
            &[("units", "Celsius or Fahrenheit temperatures")],
        ),
    ])
}

fn bm25(index: &SearchIndex, text: &str) -> Vec<(String, f64)> {
    run(index, text, Method::Bm25, None)
}

fn run(
    index: &SearchIndex,
    text: &str,
    method: Method,
    server: Option<&str>,
) -> Vec<(String, f64)> {
    let query = Query {
        text,
        method,
        limit: 10,
        server,
    };
    let hits = index.search(&query).expect("search runs");
    hits.iter()
        .map(|h| (eval::qualified(&index.docs()[h.doc]), h.score))
        .collect()
}

fn names(hits: &[(String, f64)]) -> Vec<&str> {
    hits.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn an_exact_name_ranks_first_in_every_spelling() {
    let index = catalog();
    for q in [
        "get_file_contents",
        "getFileContents",
        "get file contents",
        "github__get_file_contents",
        "github/get_file_contents",
        "github.get_file_contents",
        "github get_file_contents",
    ] {
        let hits = bm25(&index, q);
        assert_eq!(
            hits[0],
            ("github/get_file_contents".to_string(), 1.0),
            "{q}: {hits:?}"
        );
    }
    // The decoy says "get file contents" three times, yet only ranks after the name.
    let hits = bm25(&index, "get file contents");
    assert_eq!(hits[1].0, "notes/summarize");
    assert!(hits[1].1 <= TEXT_SCORE_CEILING);
}

#[test]
fn a_name_prefix_ranks_next_with_a_score_from_point_nine() {
    let index = catalog();
    let hits = bm25(&index, "create_pull_req");
    assert_eq!(hits[0].0, "github/create_pull_request");
    assert!((0.9..1.0).contains(&hits[0].1), "{hits:?}");
    let hits = bm25(&index, "create issue");
    assert_eq!(
        names(&hits[..2]),
        ["gitlab/create_issue", "github/create_issue"]
    );
    assert!(hits[..2].iter().all(|(_, s)| *s == 1.0));
}

#[test]
fn parameters_are_searched_by_name_and_description() {
    let index = catalog();
    assert_eq!(bm25(&index, "timezone")[0].0, "time/now");
    assert_eq!(bm25(&index, "fahrenheit")[0].0, "weather/forecast");
}

#[test]
fn synonyms_match_but_the_typed_word_wins() {
    let index = catalog();
    let hits = bm25(&index, "rm file");
    assert_eq!(hits[0].0, "files/delete_file", "{hits:?}");
    let hits = bm25(&index, "remove item");
    assert_eq!(
        names(&hits[..2]),
        ["files/remove_item", "files/delete_item"]
    );
    let hits = bm25(&index, "open a PR");
    assert_eq!(hits[0].0, "github/create_pull_request", "{hits:?}");
}

#[test]
fn plurals_and_verb_forms_match() {
    let index = catalog();
    assert_eq!(bm25(&index, "deleting files")[0].0, "files/delete_file");
    assert_eq!(
        bm25(&index, "issues created")[0].1,
        bm25(&index, "issue create")[0].1
    );
}

#[test]
fn unknown_words_give_nothing_and_scores_stay_in_range() {
    let index = catalog();
    assert!(bm25(&index, "bake a chocolate cake").is_empty());
    assert!(bm25(&index, "how do I").is_empty());
    assert!(bm25(&index, "").is_empty());
    for q in [
        "file",
        "create issue",
        "weather in Paris",
        "delete",
        "get_file_contents",
    ] {
        for (name, score) in bm25(&index, q) {
            assert!((MIN_SCORE..=1.0).contains(&score), "{q}: {name} {score}");
        }
    }
}

#[test]
fn limit_and_server_filter_apply_to_every_method() {
    let index = catalog();
    for method in Method::ALL {
        let hits = run(&index, "issue", method, Some("gitlab"));
        assert_eq!(names(&hits), ["gitlab/create_issue"], "{method}");
        let query = Query {
            text: "e",
            method,
            limit: 2,
            server: None,
        };
        assert!(index.search(&query).unwrap().len() <= 2);
        let none = Query { limit: 0, ..query };
        assert!(index.search(&none).unwrap().is_empty());
    }
    assert!(run(&index, "issue", Method::Bm25, Some("nope")).is_empty());
}

#[test]
fn regex_is_case_insensitive_unless_asked_and_ranks_names_first() {
    let index = catalog();
    let hits = run(&index, "CREATE_ISS", Method::Regex, None);
    assert_eq!(names(&hits), ["gitlab/create_issue", "github/create_issue"]);
    assert!(run(&index, "(?-i)CREATE_ISS", Method::Regex, None).is_empty());
    // Name hits (score 0.9) before description hits (0.6) before parameter hits (0.3).
    let hits = run(&index, "^delete|delete an|iana", Method::Regex, None);
    assert_eq!(
        names(&hits),
        ["files/delete_file", "files/delete_item", "time/now"]
    );
    assert_eq!(hits[0].1, 0.9);
    assert_eq!(hits[2].1, 0.3);
    let hits = run(&index, "item from the list", Method::Regex, None);
    assert!(hits.iter().all(|(_, s)| *s == 0.6));
}

#[test]
fn regex_length_and_syntax_errors_are_explained() {
    let index = catalog();
    let long = "a".repeat(MAX_PATTERN_LEN + 1);
    for method in [Method::Regex, Method::Exact] {
        let query = Query {
            text: &long,
            method,
            limit: 5,
            server: None,
        };
        let err = index.search(&query).unwrap_err();
        assert_eq!(err, SearchError::PatternTooLong { len: 201, max: 200 });
        assert_eq!(err.kind(), "pattern_too_long");
    }
    let ok = "é".repeat(MAX_PATTERN_LEN);
    let query = Query {
        text: &ok,
        method: Method::Regex,
        limit: 5,
        server: None,
    };
    assert!(index.search(&query).is_ok(), "the limit counts characters");
    let bad = Query {
        text: "create(",
        method: Method::Regex,
        limit: 5,
        server: None,
    };
    match index.search(&bad).unwrap_err() {
        SearchError::InvalidPattern { pattern, message } => {
            assert_eq!(pattern, "create(");
            assert!(message.contains("unclosed group"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn exact_ranks_whole_names_then_names_then_descriptions_shorter_first() {
    let index = catalog();
    let hits = run(&index, "DELETE_ITEM", Method::Exact, None);
    assert_eq!(hits[0], ("files/delete_item".to_string(), 1.0));
    let hits = run(&index, "item", Method::Exact, None);
    // Both names contain "item": the shorter first, equal lengths in catalog order.
    assert_eq!(names(&hits), ["files/remove_item", "files/delete_item"]);
    let hits = run(&index, "file", Method::Exact, None);
    assert_eq!(
        names(&hits),
        [
            "files/delete_file",
            "github/get_file_contents",
            "notes/summarize"
        ]
    );
    assert_eq!(hits[2].1, 0.6);
    assert_eq!(
        run(&index, "a.b(", Method::Exact, None),
        vec![],
        "literal, not a regex"
    );
    let hits = run(&index, "github/create", Method::Exact, None);
    assert_eq!(
        names(&hits),
        ["github/create_issue", "github/create_pull_request"]
    );
}

#[test]
fn methods_parse_and_print() {
    for method in Method::ALL {
        assert_eq!(method.as_str().parse::<Method>(), Ok(method));
        assert_eq!(method.to_string(), method.as_str());
    }
    assert_eq!("BM25".parse::<Method>(), Ok(Method::Bm25));
    assert!("fuzzy"
        .parse::<Method>()
        .unwrap_err()
        .contains("bm25, semantic, regex or exact"));
}

#[test]
fn the_index_round_trips_through_bytes() {
    let index = catalog();
    let bytes = index.to_bytes();
    assert!(bytes.starts_with(store::MAGIC));
    let loaded = SearchIndex::from_bytes(bytes.clone()).expect("loads");
    assert_eq!(loaded, index);
    for q in ["create issue", "rm file", "timezone"] {
        assert_eq!(bm25(&loaded, q), bm25(&index, q));
    }
    // A loaded index answers and shows hits without decoding every tool.
    let hits = loaded
        .search(&Query {
            text: "timezone",
            method: Method::Bm25,
            limit: 1,
            server: None,
        })
        .unwrap();
    assert_eq!(loaded.doc(hits[0].doc).unwrap().tool, "now");
    assert!(loaded.doc(loaded.len()).is_none());
    assert_eq!(loaded.docs(), index.docs());
    let empty = SearchIndex::build(Vec::new());
    assert!(empty.is_empty());
    let loaded = SearchIndex::from_bytes(empty.to_bytes()).expect("empty loads");
    assert!(bm25(&loaded, "anything").is_empty());
}

#[test]
fn damaged_bytes_are_a_corrupt_index_never_a_panic() {
    let bytes = catalog().to_bytes();
    let corrupt = |b: &[u8]| {
        matches!(
            SearchIndex::from_bytes(b.to_vec()),
            Err(SearchError::CorruptIndex(_))
        )
    };
    assert!(corrupt(b""));
    assert!(corrupt(b"not an index at all"));
    assert!(corrupt(&bytes[..bytes.len() / 2]));
    let mut old = bytes.clone();
    old[store::MAGIC.len()] = old[store::MAGIC.len()].wrapping_add(1);
    let err = SearchIndex::from_bytes(old).unwrap_err();
    assert!(err.to_string().contains("version"), "{err}");
    // Every single-byte change either still loads (and answers) or is reported as corrupt.
    for i in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[i] ^= 0x5a;
        match SearchIndex::from_bytes(damaged) {
            Ok(index) => {
                let _ = bm25(&index, "create file issue");
            }
            Err(e) => assert_eq!(e.kind(), "corrupt_index"),
        }
    }
}

mod evaluation {
    use super::*;
    use std::path::PathBuf;

    fn bench_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/search-bench")
    }

    #[test]
    fn the_held_out_split_follows_its_hash_rule() {
        let set = eval::BenchSet::load(&bench_dir()).expect("search-bench loads");
        let by_rule: Vec<String> = eval::BenchSet::all_ids(&bench_dir())
            .expect("ids")
            .into_iter()
            .filter(|id| eval::BenchSet::is_held_out_id(id))
            .collect();
        assert_eq!(set.held_out_ids, by_rule);
        assert_eq!(set.held_out.len(), by_rule.len());
        assert!(set.held_out.len() >= 150, "{}", set.held_out.len());
        assert!(set.docs.len() >= 450, "{} tools", set.docs.len());
    }

    /// Judged on held-out queries only (never tuned on), against plain BM25 measured here.
    #[test]
    fn held_out_recall_at_5_is_not_below_the_baseline() {
        let set = eval::BenchSet::load(&bench_dir()).expect("search-bench loads");
        let index = SearchIndex::build(set.docs.clone());
        let base = baseline::BaselineIndex::build(&set.docs);
        let (ours, misses) = eval::evaluate(&set.held_out, |q| eval::ours(&index, q));
        let (theirs, _) = eval::evaluate(&set.held_out, |q| eval::baseline(&base, &set.docs, q));
        let report = eval::markdown_table(&ours, &theirs);
        println!("held-out ({} queries):\n{report}", set.held_out.len());
        // For the record only: the development split is what tuning may look at.
        let (dev_ours, _) = eval::evaluate(&set.dev, |q| eval::ours(&index, q));
        let (dev_theirs, _) = eval::evaluate(&set.dev, |q| eval::baseline(&base, &set.docs, q));
        let dev_report = eval::markdown_table(&dev_ours, &dev_theirs);
        println!("development ({} queries):\n{dev_report}", set.dev.len());
        let row = |rows: &[eval::Scores], kind: &str| {
            rows.iter().find(|r| r.kind == kind).cloned().expect(kind)
        };
        let context = format!("{report}\nmisses: {misses:#?}");
        let (o, b) = (row(&ours, "overall"), row(&theirs, "overall"));
        assert!(o.recall_at_5 >= b.recall_at_5 - 0.02, "{context}");
        assert!(
            row(&ours, "no_answer").rejected >= row(&theirs, "no_answer").rejected,
            "{context}"
        );
    }
}
