//! The lease's unit tests: refusal, takeover, renewal, fencing.

use super::*;

/// A lease held by process 1 on another machine, last renewed at `heartbeat`.
fn elsewhere(token: &str, heartbeat: u64) -> Holder {
    Holder {
        token: token.into(),
        host: "elsewhere".into(),
        pid: 1,
        started: 0,
        heartbeat,
        pid_ns: None,
        released: false,
        generation: 1,
        expiry: EXPIRY.as_secs(),
    }
}

#[tokio::test]
async fn a_second_driver_is_refused_then_served_once_released() {
    let store = Store::open("memory://").expect("open");
    let first = Lease::acquire(&store, false).await.expect("free");
    match Lease::acquire(&store, false).await {
        Err(LeaseError::Held { holder, .. }) => assert_eq!(holder.pid, std::process::id()),
        other => panic!("expected Held, got {:?}", other.map(|_| ())),
    }
    first.release().await.expect("release");
    Lease::acquire(&store, false).await.expect("free again").release().await.expect("release");
}

#[tokio::test(start_paused = true)]
async fn a_lease_whose_holder_is_gone_is_taken_over_once() {
    let store = Store::open("memory://").expect("open");
    let gone = elsewhere("t0", 0);
    store.put_json(layout::LEASE, &gone).await.expect("put");
    let (a, b) = tokio::join!(Lease::acquire(&store, false), Lease::acquire(&store, false));
    assert!(a.is_ok() != b.is_ok(), "exactly one of two racing drivers takes over");
}

/// A live holder elsewhere whose heartbeat looks a minute old by this
/// machine's clock (ours runs ahead) is not taken over: its heartbeat
/// is seen to move.
#[tokio::test(start_paused = true)]
async fn a_skewed_clock_does_not_take_a_live_lease() {
    fn two_minutes_ahead() -> u64 {
        unix_now() + 120
    }
    let store = Store::open("memory://").expect("open");
    let live = elsewhere("live", unix_now());
    store.put_json(layout::LEASE, &live).await.expect("put");
    let renewer = {
        let (store, mut live) = (store.clone(), live.clone());
        tokio::spawn(async move {
            for beat in 1..=100 {
                tokio::time::sleep(HEARTBEAT).await;
                live.heartbeat = unix_now() + beat;
                store.put_json(layout::LEASE, &live).await.expect("renew");
            }
        })
    };
    match Lease::acquire_with_clock(&store, false, EXPIRY, two_minutes_ahead).await {
        Err(LeaseError::Held { holder, .. }) => assert_eq!(holder.token, "live"),
        other => panic!("a live lease was taken: {:?}", other.map(|_| ())),
    }
    // Once it stops moving, it is gone: taken over after the expiry.
    renewer.abort();
    let started = tokio::time::Instant::now();
    let lease = Lease::acquire_with_clock(&store, false, EXPIRY, two_minutes_ahead).await.expect("taken over");
    assert!(started.elapsed() >= EXPIRY, "watched for the expiry first");
    lease.release().await.expect("release");
}

/// A run's expiry is the holder's promise: its heartbeat and fence follow
/// from it (the defaults from the default), it is written in the lease (a
/// lease written before it was has the default), and a successor waits the
/// holder's expiry, not its own.
#[tokio::test(start_paused = true)]
async fn a_successor_waits_the_expiry_the_holder_wrote() {
    let default = Holder::me(EXPIRY);
    assert_eq!((default.heartbeat_every(), default.fence_for()), (HEARTBEAT, FENCE));
    let short = Holder::me(Duration::from_secs(12));
    assert_eq!((short.heartbeat_every(), short.fence_for()), (Duration::from_secs(2), Duration::from_secs(8)));
    assert_eq!(Holder::me(Duration::from_secs(1)).expiry(), MIN_EXPIRY, "at least the shortest expiry");
    let mut old = serde_json::to_value(&short).expect("JSON");
    old.as_object_mut().expect("object").remove("expiry");
    assert_eq!(serde_json::from_value::<Holder>(old).expect("an older lease").expiry(), EXPIRY);

    let store = Store::open("memory://").expect("open");
    let quick = Holder { expiry: 12, ..elsewhere("quick", unix_now()) };
    store.put_json(layout::LEASE, &quick).await.expect("put");
    // Stale by this machine's clock once its 12 s are past; then watched
    // for 12 s more (not the successor's own 60 s) and taken over.
    fn a_minute_ahead() -> u64 {
        unix_now() + 60
    }
    let started = tokio::time::Instant::now();
    let lease = Lease::acquire_with_clock(&store, false, EXPIRY, a_minute_ahead).await.expect("taken over");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(12) && waited < EXPIRY, "watched {waited:?}");
    let now = current(&store).await.expect("read").expect("a lease");
    assert_eq!(
        (now.holder.expiry(), now.holder.generation),
        (EXPIRY, 2),
        "the successor's own expiry, one generation on"
    );
    lease.release().await.expect("release");
}

/// A holder that stalled (stopped and resumed) after another driver
/// took over stops at once: its fence is revoked at its next renewal,
/// and its requests stop with it (the fetcher checks the fence).
#[tokio::test(start_paused = true)]
async fn a_stalled_holder_that_wakes_after_a_takeover_stops() {
    let store = Store::open("memory://").expect("open");
    let lease = Lease::acquire(&store, false).await.expect("free");
    let fence = lease.fence();
    assert!(!lease.lost() && fence.holds());
    let other = Holder { token: "other".into(), ..Holder::me(EXPIRY) };
    store.put_json(layout::LEASE, &other).await.expect("taken over meanwhile");
    tokio::time::sleep(HEARTBEAT + Duration::from_secs(1)).await;
    assert!(lease.lost() && !fence.holds(), "lost and fenced");
    // It never overwrites the successor's lease.
    let now: Holder = store.get_json(layout::LEASE).await.expect("get").expect("lease");
    assert_eq!(now.token, "other");
}

/// In a local folder, a holder that read its lease, stalled, and
/// writes its renewal after another driver took the lease over does
/// not overwrite the successor's lease: the renewal finds it taken.
#[tokio::test]
async fn a_stalled_holder_cannot_overwrite_its_successor_in_a_local_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().to_str().expect("utf-8")).expect("open");
    let lease = Lease::acquire(&store, false).await.expect("free");
    let read = current(&store).await.expect("read").expect("held");
    let mut me = read.holder.clone();
    // The holder stalls here; its heartbeat is seen stale and a
    // successor takes over from the same version.
    let successor = Holder { token: "successor".into(), ..Holder::me(EXPIRY) };
    assert!(take_over(&store, &read, &successor).await.expect("take over"), "the successor takes it");
    assert_eq!(renew_read(&store, &read, &mut me).await, Renewal::Taken, "the woken holder finds it taken");
    let now = current(&store).await.expect("read").expect("lease");
    assert_eq!(now.holder.token, "successor", "the successor's lease stands");
    lease.release().await.expect("release");
    assert!(!current(&store).await.expect("read").expect("lease").holder.released, "not released by the loser");
}

/// A renewal sent twice (the client tried again after a server error
/// or a lost answer, and the first sending had landed) is refused by
/// the store, since the version it names is gone; it is the holder's
/// own write, so the lease is still held. Another driver's write is
/// not taken for it.
#[tokio::test]
async fn a_renewal_sent_twice_is_not_taken_for_a_takeover() {
    let store = Store::open("memory://").expect("open");
    let lease = Lease::acquire(&store, false).await.expect("free");
    let read = current(&store).await.expect("read").expect("held");
    let mut me = Holder { heartbeat: read.holder.heartbeat + 10, ..read.holder.clone() };
    assert!(replace(&store, &read, &me).await.expect("replace"), "the first sending lands");
    assert!(replace(&store, &read, &me).await.expect("replace"), "the second finds its own write");
    let successor = Holder { token: "successor".into(), ..Holder::me(EXPIRY) };
    let now = current(&store).await.expect("read").expect("held");
    assert!(replace(&store, &now, &successor).await.expect("replace"), "taken over");
    assert!(!replace(&store, &now, &me).await.expect("replace"), "a write from before the takeover is refused");
    assert_eq!(renew_read(&store, &now, &mut me).await, Renewal::Taken);
    lease.release().await.expect("release");
}

/// Drivers in threads of their own (each its own store handle and
/// runtime, as separate processes would be) find the lease of a dead
/// process of this host at once, many times over: each time exactly
/// one takes it over.
#[test]
fn racing_takeovers_in_a_local_folder_have_one_winner() {
    const DRIVERS: usize = 4;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_str().expect("utf-8").to_string();
    for round in 0..40 {
        let dead = Holder { token: format!("dead-{round}"), pid: u32::MAX, ..Holder::me(EXPIRY) };
        assert!(dead.is_dead_here());
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let store = Store::open(&root).expect("open");
        rt.block_on(store.put_json(layout::LEASE, &dead)).expect("put");
        let (start, done) = (Arc::new(std::sync::Barrier::new(DRIVERS)), Arc::new(std::sync::Barrier::new(DRIVERS)));
        let drivers: Vec<_> = (0..DRIVERS)
            .map(|_| {
                let (root, start, done) = (root.clone(), Arc::clone(&start), Arc::clone(&done));
                std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
                    let store = Store::open(&root).expect("open");
                    start.wait();
                    let got = rt.block_on(Lease::acquire(&store, false));
                    // Winners hold on until every driver has tried.
                    done.wait();
                    match got {
                        Ok(lease) => rt.block_on(lease.release()).map(|()| Some(lease_token(&store, &rt))),
                        Err(LeaseError::Held { .. }) => Ok(None),
                        Err(LeaseError::Store(e)) => Err(e),
                    }
                })
            })
            .collect();
        let results: Vec<_> = drivers.into_iter().map(|d| d.join().expect("driver").expect("store")).collect();
        let winners = results.iter().filter(|r| r.is_some()).count();
        assert_eq!(winners, 1, "round {round}: {results:?}");
    }
}

fn lease_token(store: &Store, rt: &tokio::runtime::Runtime) -> String {
    rt.block_on(current(store)).expect("read").expect("lease").holder.token
}

/// A store that fails the renewals: the run may go on for the fence's
/// time, not forever, and stops before a successor may take over.
#[tokio::test(start_paused = true)]
async fn a_store_that_fails_renewals_fences_the_run_before_the_expiry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().to_str().expect("utf-8")).expect("open");
    let lease = Lease::acquire(&store, false).await.expect("free");
    // The lease file becomes unreadable (a link to itself: every read
    // fails, and the lease is not seen as gone either).
    let path = dir.path().join(layout::LEASE);
    std::fs::remove_file(&path).expect("remove");
    std::os::unix::fs::symlink(&path, &path).expect("a link loop in its place");
    tokio::time::sleep(FENCE - HEARTBEAT).await;
    assert!(!lease.lost(), "a failing renewal is not given up at once");
    tokio::time::sleep(HEARTBEAT + HEARTBEAT).await;
    assert!(lease.lost(), "not renewed for the fence's time: stopped");
    assert!(FENCE + HEARTBEAT < EXPIRY, "stopped before a successor may take over");
}

/// Each change of holder is one generation on; renewals keep it.
#[tokio::test(start_paused = true)]
async fn each_holder_is_a_generation_on_from_the_one_before() {
    let store = Store::open("memory://").expect("open");
    let first = Lease::acquire(&store, false).await.expect("free");
    assert_eq!(first.generation(), 1);
    tokio::time::sleep(HEARTBEAT * 2 + Duration::from_secs(1)).await;
    assert_eq!(current(&store).await.expect("read").expect("lease").holder.generation, 1, "renewed, same generation");
    first.release().await.expect("release");
    let second = Lease::acquire(&store, false).await.expect("released: free");
    assert_eq!((second.generation(), second.fence().generation()), (2, 2));
    second.release().await.expect("release");
}

/// A task's watch of its driver's lease: it acts while it sees the lease
/// renewed, runs out when the renewals stop (before a successor may take
/// over), and is refused, or revoked, under another generation.
#[tokio::test(start_paused = true)]
async fn a_task_acts_while_it_sees_its_drivers_lease_renewed_and_never_after_a_takeover() {
    let store = Store::open("memory://").expect("open");
    let lease = Lease::acquire(&store, false).await.expect("free");
    let err = watch(&store, 9, Some(FENCE)).await.expect_err("another generation");
    assert!(matches!(&err, StoreError::Fenced { ours: 9, .. }), "{err}");
    // Given what was left of the driver's fence.
    let task = watch(&store, 1, Some(Duration::from_secs(30))).await.expect("its generation");
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert!(task.holds(), "renewals seen: it goes on past what it was given");
    // Without it, it waits for a renewal first.
    let pod = watch(&store, 1, None).await.expect("a renewal is seen within a heartbeat");
    assert!(pod.holds());
    // The driver stops renewing (stopped): the task's fence runs out
    // before a successor could take over.
    lease.renewer.abort();
    let stopped = tokio::time::Instant::now();
    for fence in [&task, &pod] {
        fence.ran_out().await;
        assert!(stopped.elapsed() <= FENCE, "ran out {:?} after the last renewal", stopped.elapsed());
    }
    // A takeover revokes a task that still looks.
    let fresh = Store::open("memory://").expect("open");
    let driver = Lease::acquire(&fresh, false).await.expect("free");
    let task = watch(&fresh, 1, Some(FENCE)).await.expect("its generation");
    let read = current(&fresh).await.expect("read").expect("lease");
    let successor = Holder { token: "successor".into(), ..Holder::me(EXPIRY) }.after(&read.holder);
    assert!(replace(&fresh, &read, &successor).await.expect("take over"));
    tokio::time::sleep(WAIT_POLL * 2).await;
    assert!(!task.holds(), "revoked at its next look");
    drop(driver);
}
