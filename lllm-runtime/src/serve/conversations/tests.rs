use super::*;
use lllm_core::Role;

/// A fresh directory of this test's own, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "lllm-conversations-{name}-{}-{}",
            std::process::id(),
            lllm_core::DialogId::new()
        ));
        std::fs::create_dir_all(&dir).expect("a directory");
        Scratch(dir)
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn key(caller: &str, id: &str) -> ConversationKey {
    ConversationKey {
        caller: caller.into(),
        model: "m".into(),
        id: id.into(),
    }
}

fn snapshot(caller: &str, id: &str, answer: &str) -> Snapshot {
    Snapshot {
        key: key(caller, id),
        session: id.into(),
        tactic: "t".into(),
        client_system: String::new(),
        transcript: vec![
            Entry::user("question"),
            Entry {
                role: Role::Assistant,
                text: answer.into(),
                response: Some(format!("resp_{id}")),
                item: Some(format!("msg_{id}")),
            },
        ],
        dialogs: Vec::new(),
    }
}

const ROOMY: Bounds = Bounds {
    count: DEFAULT_KEPT_CONVERSATIONS,
    bytes: DEFAULT_KEPT_CONVERSATION_BYTES,
};

#[test]
fn ten_thousand_one_turn_conversations_stay_within_the_default_bounds() {
    let store = Conversations::open(None, ROOMY).expect("in memory");
    for n in 0..10_000 {
        store.remember(snapshot("k", &n.to_string(), &format!("answer {n}")));
    }
    let (count, bytes) = store.size();
    assert_eq!(count, DEFAULT_KEPT_CONVERSATIONS);
    assert!(bytes <= DEFAULT_KEPT_CONVERSATION_BYTES);
    let kept = store.lock();
    assert_eq!(kept.order.len(), count);
    assert_eq!(kept.by_history.len(), count);
    assert_eq!((kept.by_response.len(), kept.by_item.len()), (count, count));
    drop(kept);
    assert!(store.get(&key("k", "0")).is_none(), "the oldest went first");
    assert!(store.get(&key("k", "9999")).is_some());
}

#[test]
fn the_least_recently_used_goes_first_and_bytes_bound_too() {
    let one = serde_json::to_vec(&snapshot("k", "a", "x"))
        .expect("json")
        .len();
    let store = Conversations::open(
        None,
        Bounds {
            count: 2,
            bytes: 10 * one,
        },
    )
    .expect("in memory");
    store.remember(snapshot("k", "a", "x"));
    store.remember(snapshot("k", "b", "x"));
    assert!(store.get(&key("k", "a")).is_some(), "a used again");
    store.remember(snapshot("k", "c", "x"));
    assert!(
        store.get(&key("k", "b")).is_none(),
        "b was the least recently used"
    );
    assert!(store.get(&key("k", "a")).is_some());
    let store = Conversations::open(
        None,
        Bounds {
            count: 100,
            bytes: 2 * one + one / 2,
        },
    )
    .expect("in memory");
    for id in ["a", "b", "c"] {
        store.remember(snapshot("k", id, "x"));
    }
    assert_eq!(store.size().0, 2);
    store.remember(snapshot("k", "big", &"x".repeat(3 * one)));
    assert!(
        store.get(&key("k", "big")).is_none(),
        "past the bytes alone"
    );
}

#[test]
fn another_callers_responses_and_items_are_not_found() {
    let store = Conversations::open(None, ROOMY).expect("in memory");
    store.remember(snapshot("k1", "a", "secret answer"));
    assert!(store.by_response("k1", "resp_a").is_some());
    assert!(store.by_item("k1", "msg_a").is_some());
    assert!(store.by_response("k2", "resp_a").is_none());
    assert!(store.by_item("k2", "msg_a").is_none());
    let found = store.by_response("k1", "resp_a").expect("found");
    assert!(found.is_latest());
}

#[test]
fn a_restarted_store_reads_its_conversations_back_and_skips_hostile_files() {
    let dir = Scratch::new("restart");
    {
        let store = Conversations::open(Some(dir.path()), ROOMY).expect("opened");
        store.remember(snapshot("k", "a", "first"));
        store.remember(snapshot("k", "b", "second"));
    }
    let folder = dir.path().join("conversations");
    std::fs::write(folder.join("junk.json"), b"{not json").expect("junk");
    // A snapshot under another key's name is not taken for that key.
    let b = std::fs::read(folder.join(format!("{}.json", key("k", "b").file_stem()))).expect("b");
    std::fs::write(
        folder.join(format!("{}.json", key("k", "z").file_stem())),
        b,
    )
    .expect("z");
    let store = Conversations::open(Some(dir.path()), ROOMY).expect("reopened");
    assert_eq!(store.size().0, 2);
    let a = store.get(&key("k", "a")).expect("a kept");
    assert_eq!(a.transcript[1].text, "first");
    assert!(store.get(&key("k", "z")).is_none());
    let digest = a.history_digest();
    assert_eq!(store.by_history(&digest), Some(key("k", "a")));
}

#[test]
fn a_forgotten_conversations_file_is_removed() {
    let dir = Scratch::new("forgotten");
    let store = Conversations::open(
        Some(dir.path()),
        Bounds {
            count: 1,
            bytes: usize::MAX,
        },
    )
    .expect("opened");
    store.remember(snapshot("k", "a", "x"));
    store.remember(snapshot("k", "b", "x"));
    let files = std::fs::read_dir(dir.path().join("conversations"))
        .expect("listed")
        .count();
    assert_eq!(files, 1);
}
