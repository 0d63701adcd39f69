use super::*;

fn book_of(entries: &[(&str, &str, bool, u64)]) -> HashMap<SessionId, Entry> {
    let start = Instant::now();
    entries
        .iter()
        .map(|(id, owner, asked, age)| {
            let entry = Entry {
                owner: Arc::from(*owner),
                used: start - Duration::from_secs(*age),
                asked: *asked,
                open: Arc::default(),
                calls: Arc::default(),
                kept: start,
            };
            (SessionId::from(*id), entry)
        })
        .collect()
}

fn limits(max_sessions: usize, max_per_key: usize) -> SessionLimits {
    SessionLimits {
        max_sessions,
        max_per_key,
        idle: SESSION_IDLE,
    }
}

#[test]
fn a_session_that_never_asked_goes_before_one_in_use() {
    let book = book_of(&[
        ("used", "k", true, 50),
        ("flood", "k", false, 1),
        ("new", "k", false, 0),
    ]);
    let new = SessionId::from("new");
    let gone = victim(&book, &new, &Arc::from("k"), &limits(2, 10));
    assert_eq!(gone.as_deref(), Some("flood"));
}

#[test]
fn among_used_sessions_the_one_idle_longest_goes_and_busy_ones_last() {
    let book = book_of(&[
        ("a", "k", true, 50),
        ("b", "k", true, 90),
        ("new", "k", false, 0),
    ]);
    book[&SessionId::from("b")].open.store(1, Ordering::Relaxed);
    let gone = victim(
        &book,
        &SessionId::from("new"),
        &Arc::from("k"),
        &limits(2, 10),
    );
    assert_eq!(gone.as_deref(), Some("a"));
}

#[test]
fn the_per_key_cap_evicts_only_that_keys_sessions() {
    let book = book_of(&[
        ("other", "k2", false, 99),
        ("mine", "k1", false, 5),
        ("new", "k1", false, 0),
    ]);
    let gone = victim(
        &book,
        &SessionId::from("new"),
        &Arc::from("k1"),
        &limits(10, 1),
    );
    assert_eq!(gone.as_deref(), Some("mine"));
    let none = victim(
        &book,
        &SessionId::from("new"),
        &Arc::from("k1"),
        &limits(10, 2),
    );
    assert_eq!(none, None);
}
