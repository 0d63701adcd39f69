//! Exactness: our counts against tiktoken-rs's `encode_ordinary` (a dev-dependency kept for
//! these tests only) on the bench catalog's tool definitions, hand-picked hard texts and
//! generated ones; and the embedded vocabulary token by token.

use std::sync::OnceLock;

use proptest::prelude::*;
use tiktoken_rs::CoreBPE;

use super::*;

fn ours() -> &'static Vocabulary {
    static OURS: OnceLock<Vocabulary> = OnceLock::new();
    OURS.get_or_init(|| Vocabulary::load().expect("embedded vocabulary"))
}

fn reference() -> &'static CoreBPE {
    static REFERENCE: OnceLock<CoreBPE> = OnceLock::new();
    REFERENCE.get_or_init(|| tiktoken_rs::o200k_base().expect("tiktoken-rs o200k_base"))
}

fn assert_same_count(text: &str) {
    assert_eq!(
        ours().count(text),
        reference().encode_ordinary(text).len(),
        "count differs from tiktoken-rs on {:?}",
        text.chars().take(200).collect::<String>()
    );
}

#[test]
fn vocabulary_matches_tiktoken() {
    let vocabulary = ours();
    for rank in 0..TOKENS as u32 {
        let token = vocabulary.token(rank);
        assert_eq!(
            reference()
                .decode_bytes(&[rank])
                .expect("a rank tiktoken knows"),
            token,
            "token {rank}"
        );
        assert_eq!(vocabulary.rank(token), Some(rank), "lookup of token {rank}");
    }
    assert_eq!(vocabulary.rank(b"no such token \xff\xfe"), None);
}

#[test]
fn counts_the_bench_catalog_as_tiktoken_does() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/search-bench/tools"
    );
    let mut files = 0;
    for entry in std::fs::read_dir(dir).expect("the search-bench fixture") {
        let path = entry.expect("a directory entry").path();
        let text = std::fs::read_to_string(&path).expect("a fixture file");
        assert_same_count(&text);
        let tools: Vec<serde_json::Value> = serde_json::from_str(&text).expect("a tool list");
        for tool in &tools {
            assert_same_count(&tool.to_string());
        }
        files += 1;
    }
    assert!(files >= 30, "the fixture holds the 33 servers' tools");
}

#[test]
fn counts_hard_texts_as_tiktoken_does() {
    let texts = [
        String::new(),
        "hello world".into(),
        "  leading, trailing  ".into(),
        "a  b   c    d\te\t\tf \u{3000}\u{3000}g\u{a0}\u{a0}h".into(),
        "line\n\n  indented\r\n\r\n\tx \n y  \n\n".into(),
        "   ".into(),
        " \n ".into(),
        "end with spaces   ".into(),
        "I'm you'RE they'll it'S we've he'd 'd''s ſ's Kelvin K's".into(),
        "日本語のテキスト、中文文本，한국어 텍스트".into(),
        "emoji 🚀🎉 ZWJ 👩‍💻 flags 🇫🇷🇩🇪 skin 👍🏽".into(),
        "e\u{301}e\u{301} combining ǅungla ǈ Title ᾈ".into(),
        "12345678901234567890 3.14159 -0.5e10 ١٢٣٤٥ ²³ Ⅻ".into(),
        "path/to/file.rs:42:7 https://example.com/a?b=c&d=e#f //\n//\r\n".into(),
        "camelCaseWords HTTPServer XMLHttpRequest snake_case_words".into(),
        "a".repeat(5000),
        "ab".repeat(3000),
        "9".repeat(4001),
        " ".repeat(3000) + "x",
        "\n".repeat(500) + &"\t".repeat(500) + "y",
        "!@#$%^&*()".repeat(300),
        "é".repeat(2000),
        "日".repeat(2000),
        "🚀".repeat(700),
        "Supercalifragilisticexpialidocious".repeat(100),
        "x\u{0}y\u{7f}z\u{feff}w\u{200b}v".into(),
    ];
    for text in &texts {
        assert_same_count(text);
    }
}

#[test]
fn both_merges_agree() {
    let vocabulary = ours();
    let samples: [&[u8]; 5] = [
        b"internationalization",
        b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "デフォルトのコンフィギュレーション".as_bytes(),
        b"\xff\xfe\x00\x01 mixed bytes\x80\x81",
        b"pneumonoultramicroscopicsilicovolcanoconiosis",
    ];
    for piece in samples {
        assert_eq!(
            vocabulary.merge_by_scan(piece),
            vocabulary.merge_by_heap(piece),
            "{piece:?}"
        );
    }
}

/// Fragments chosen to meet the pattern's edges: case, contractions, digits, whitespace of
/// every kind, line breaks, marks, CJK and emoji.
const FRAGMENTS: &[&str] = &[
    " ",
    "  ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\u{3000}",
    "\u{a0}",
    "a",
    "Ab",
    "HTTP",
    "word",
    "'s",
    "'LL",
    "'",
    "1",
    "123",
    "4567",
    "/",
    ".",
    "-",
    "_",
    "{",
    "\"",
    "é",
    "e\u{301}",
    "ǅ",
    "日本",
    "한",
    "🚀",
    "👩‍💻",
    "١",
    "ſ",
    "K",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn counts_generated_texts_as_tiktoken_does(
        parts in proptest::collection::vec(proptest::sample::select(FRAGMENTS), 0..40)
    ) {
        let text = parts.concat();
        prop_assert_eq!(ours().count(&text), reference().encode_ordinary(&text).len(), "{:?}", text);
    }

    #[test]
    fn merges_agree(
        piece in proptest::collection::vec(proptest::sample::select(&b"aeinrst d\xc3\xa9"[..]), 2..300)
    ) {
        prop_assert_eq!(ours().merge_by_scan(&piece), ours().merge_by_heap(&piece));
    }
}
