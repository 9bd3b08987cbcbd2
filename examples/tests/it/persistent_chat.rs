//! The persistent chat, run three times on one file as three processes
//! would: each run continues the thread the previous one stored.

use state_examples::persistent_chat::run_once;

#[tokio::test]
async fn each_run_continues_the_thread_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chat.db");

    let first = run_once(&path, "hi").await.unwrap();
    assert_eq!((first.resumed_at, first.seq, first.run), (0, 3, 1));
    assert_eq!(first.messages.len(), 2);

    let second = run_once(&path, "me again").await.unwrap();
    assert_eq!(second.resumed_at, first.seq, "continued from the file");
    assert_eq!((second.seq, second.run), (6, 2));
    assert_eq!(second.messages[..2], first.messages[..]);
    assert_eq!(
        second.messages[3],
        "This is run 2 of our chat; I remember 2 earlier messages."
    );

    let third = run_once(&path, "and again").await.unwrap();
    assert_eq!(
        (third.resumed_at, third.run, third.messages.len()),
        (6, 3, 6)
    );
}
