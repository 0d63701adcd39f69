//! The Redis store: one connection manager (reconnecting on its own, every command bounded by
//! [`RESPONSE_TIMEOUT`]), keys namespaced `mcp-launch:<kind>:<id>`, a watcher that keeps
//! [`Redis::is_reachable`] current for `/readyz`, and news between replicas (`PUBLISH` on
//! channels `mcp-launch:<kind>`, each listener on a connection of its own).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::AsyncCommands;

use super::StateError;

/// How long a connection to Redis may take to open: a store across a LAN answers in
/// milliseconds; longer means it is down, and a client's request must not wait on it.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long one command may wait for its answer (the same reason: far above a healthy store's
/// latency, short enough that a client's request fails instead of hanging).
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);

/// How often the watcher pings the store for `/readyz`.
const WATCH_EVERY: Duration = Duration::from_secs(2);

/// How soon a listener whose connection was lost tries again: news missed meanwhile is lost
/// (a session ended elsewhere then ends here at its idle time), so soon; one connect per
/// half second against a store that is down costs nothing (as the watcher's pings, a fixed
/// pace: `backoff` is a room of the same floor).
const LISTEN_AGAIN: Duration = Duration::from_millis(500);

/// The prefix of every key we write: the store may be shared with other programs.
pub const PREFIX: &str = "mcp-launch";

/// The atomic compare-and-set of [`Redis::update`]: writes the record and moves its stamp only
/// when the stamp is still the one read (another replica's change in between: try again).
const SWAP_SCRIPT: &str = "if (redis.call('GET', KEYS[2]) or '') == ARGV[1] then \
     redis.call('SET', KEYS[1], ARGV[2]) \
     return redis.call('INCR', KEYS[2]) else return -1 end";

/// The compare-and-swap of [`Redis::swap`]: the record replaced only while it is still the one
/// read, its expiry kept.
const SWAP_KEEPING_TTL: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
     redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL') return 1 else return 0 end";

/// Adds ARGV[1] to the set KEYS[1] (expiring ARGV[3] ms from now) unless it then holds more
/// than ARGV[2] members: 1 when added, 0 when the cap refused it (the set as it was).
const SET_ADD_CAPPED: &str = "local added = redis.call('SADD', KEYS[1], ARGV[1]) \
     if redis.call('SCARD', KEYS[1]) > tonumber(ARGV[2]) then \
       if added == 1 then redis.call('SREM', KEYS[1], ARGV[1]) end return 0 end \
     redis.call('PEXPIRE', KEYS[1], ARGV[3]) return 1";

/// A Redis state store.
pub struct Redis {
    /// The URL with its password taken out: what errors and logs name.
    url: String,
    /// The client the manager was made from (listeners open their own connection with it).
    client: ::redis::Client,
    manager: ConnectionManager,
    /// The runtime the manager's connection lives on (blocking callers wait on it).
    runtime: tokio::runtime::Handle,
    /// Whether the last ping was answered.
    reachable: AtomicBool,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis").field("url", &self.url).finish()
    }
}

impl Redis {
    /// The store at `url` (`redis://[:PASSWORD@]HOST[:PORT][/DB]`). A malformed URL is an
    /// error; an unreachable store is not (a replica may start before its Redis): it is
    /// warned about, `/readyz` says 503 until it answers, and commands fail meanwhile.
    pub async fn connect(url: &str) -> Result<Arc<Redis>, StateError> {
        let shown = super::redacted(url);
        let bad = |reason: String| StateError::BadUrl {
            url: shown.clone(),
            reason,
        };
        if !url.starts_with("redis://") && !url.starts_with("redis+unix://") {
            return Err(bad("only redis:// URLs are known".into()));
        }
        let client = ::redis::Client::open(url).map_err(|e| bad(e.to_string()))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500));
        let manager = ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|e| bad(e.to_string()))?;
        let redis = Arc::new(Redis {
            url: shown,
            client,
            manager,
            runtime: tokio::runtime::Handle::current(),
            reachable: AtomicBool::new(false),
        });
        if let Err(e) = redis.ping().await {
            tracing::warn!(error = %e, "the state store does not answer yet");
        }
        spawn_watcher(Arc::downgrade(&redis));
        Ok(redis)
    }

    /// The store's URL without its password.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether the store answered its last ping (within [`WATCH_EVERY`]).
    pub fn is_reachable(&self) -> bool {
        self.reachable.load(Ordering::Relaxed)
    }

    /// The key of record `id` of `kind`: `mcp-launch:<kind>:<id>`.
    pub fn key(kind: &str, id: &str) -> String {
        format!("{PREFIX}:{kind}:{id}")
    }

    fn failed(&self, what: &'static str) -> impl Fn(::redis::RedisError) -> StateError + '_ {
        move |e| {
            self.reachable.store(false, Ordering::Relaxed);
            StateError::Unreachable {
                url: self.url.clone(),
                what,
                reason: e.to_string(),
            }
        }
    }

    /// Pings the store, noting whether it answered.
    pub async fn ping(&self) -> Result<(), StateError> {
        let mut connection = self.manager.clone();
        let answer: Result<String, _> = ::redis::cmd("PING").query_async(&mut connection).await;
        answer.map_err(self.failed("did not answer a PING"))?;
        self.reachable.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// The record at `key`, if any.
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StateError> {
        let mut connection = self.manager.clone();
        connection
            .get(key)
            .await
            .map_err(self.failed("did not answer a GET"))
    }

    /// Writes `value` at `key`, to expire after `ttl` when one is given; with `only_new`, a
    /// record already there is kept as it is (its expiry too).
    pub async fn put(
        &self,
        key: &str,
        value: &[u8],
        ttl: Option<Duration>,
        only_new: bool,
    ) -> Result<(), StateError> {
        let mut command = ::redis::cmd("SET");
        command.arg(key).arg(value);
        if let Some(ttl) = ttl {
            command.arg("PX").arg(ttl.as_millis().max(1) as u64);
        }
        if only_new {
            command.arg("NX");
        }
        let mut connection = self.manager.clone();
        let _: ::redis::Value = command
            .query_async(&mut connection)
            .await
            .map_err(self.failed("did not answer a SET"))?;
        Ok(())
    }

    /// Sets the expiry of `key` to `ttl` from now (nothing when there is no such record).
    pub async fn expire(&self, key: &str, ttl: Duration) -> Result<(), StateError> {
        let mut connection = self.manager.clone();
        let _: bool = connection
            .pexpire(key, ttl.as_millis().max(1) as i64)
            .await
            .map_err(self.failed("did not answer a PEXPIRE"))?;
        Ok(())
    }

    /// Takes the record at `key`: read and removed at once, so only one caller of all the
    /// replicas gets it (`GETDEL`).
    pub async fn take(&self, key: &str) -> Result<Option<Vec<u8>>, StateError> {
        let mut connection = self.manager.clone();
        ::redis::cmd("GETDEL")
            .arg(key)
            .query_async(&mut connection)
            .await
            .map_err(self.failed("did not answer a GETDEL"))
    }

    /// Removes `key`.
    pub async fn delete(&self, key: &str) -> Result<(), StateError> {
        let mut connection = self.manager.clone();
        let _: usize = connection
            .del(key)
            .await
            .map_err(self.failed("did not answer a DEL"))?;
        Ok(())
    }

    /// The records at `keys`, in their order (`None` where there is none).
    pub async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, StateError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut connection = self.manager.clone();
        ::redis::cmd("MGET")
            .arg(keys)
            .query_async(&mut connection)
            .await
            .map_err(self.failed("did not answer an MGET"))
    }

    /// Replaces the record at `key` with `new` if it is still `old` (another replica's change
    /// in between: false), keeping its expiry.
    pub async fn swap(&self, key: &str, old: &[u8], new: &[u8]) -> Result<bool, StateError> {
        let mut connection = self.manager.clone();
        let swapped: i64 = ::redis::Script::new(SWAP_KEEPING_TTL)
            .key(key)
            .arg(old)
            .arg(new)
            .invoke_async(&mut connection)
            .await
            .map_err(self.failed("did not answer a swap"))?;
        Ok(swapped == 1)
    }

    /// Adds `member` to the set at `key`, the set expiring `ttl` from now.
    pub async fn set_add(&self, key: &str, member: &str, ttl: Duration) -> Result<(), StateError> {
        let mut connection = self.manager.clone();
        let _: () = ::redis::pipe()
            .sadd(key, member)
            .ignore()
            .pexpire(key, ttl.as_millis().max(1) as i64)
            .ignore()
            .query_async(&mut connection)
            .await
            .map_err(self.failed("did not answer an SADD"))?;
        Ok(())
    }

    /// Adds `member` to the set at `key` unless that would make it hold more than `cap`
    /// members, in one step (replicas adding at the same instant cannot pass the cap); the set
    /// expires `ttl` from now. False when the cap refused it.
    pub async fn set_add_capped(
        &self,
        key: &str,
        member: &str,
        cap: usize,
        ttl: Duration,
    ) -> Result<bool, StateError> {
        let mut connection = self.manager.clone();
        let added: i64 = ::redis::Script::new(SET_ADD_CAPPED)
            .key(key)
            .arg(member)
            .arg(cap)
            .arg(ttl.as_millis().max(1) as u64)
            .invoke_async(&mut connection)
            .await
            .map_err(self.failed("did not answer a capped SADD"))?;
        Ok(added == 1)
    }

    /// The members of the set at `key`.
    pub async fn set_members(&self, key: &str) -> Result<Vec<String>, StateError> {
        let mut connection = self.manager.clone();
        connection
            .smembers(key)
            .await
            .map_err(self.failed("did not answer an SMEMBERS"))
    }

    /// Takes `members` out of the set at `key`.
    pub async fn set_remove(&self, key: &str, members: &[String]) -> Result<(), StateError> {
        if members.is_empty() {
            return Ok(());
        }
        let mut connection = self.manager.clone();
        let _: usize = connection
            .srem(key, members)
            .await
            .map_err(self.failed("did not answer an SREM"))?;
        Ok(())
    }

    /// Tells every replica listening on `channel` (a kind: the channel is
    /// `mcp-launch:<channel>`) `news`; replicas not listening at that moment never hear it.
    pub async fn publish(&self, channel: &str, news: &[u8]) -> Result<(), StateError> {
        let mut connection = self.manager.clone();
        let _: usize = connection
            .publish(format!("{PREFIX}:{channel}"), news)
            .await
            .map_err(self.failed("did not answer a PUBLISH"))?;
        Ok(())
    }

    /// Listens on `channel` (see [`Redis::publish`]) in the background, giving each piece of
    /// news to `hear` until it answers false; a lost connection is opened again every
    /// [`LISTEN_AGAIN`], news published meanwhile being missed.
    pub fn spawn_listener<F>(&self, channel: &str, mut hear: F)
    where
        F: FnMut(&[u8]) -> bool + Send + 'static,
    {
        let (client, url) = (self.client.clone(), self.url.clone());
        let channel = format!("{PREFIX}:{channel}");
        tokio::spawn(async move {
            loop {
                match listen(&client, &channel, &mut hear).await {
                    Ok(()) => return,
                    Err(e) => tracing::warn!(%url, %channel, error = %e, "listening again"),
                }
                tokio::time::sleep(LISTEN_AGAIN).await;
            }
        });
    }

    /// Appends `value` to the list at `key`, keeping its last `keep` entries.
    pub async fn append_capped(
        &self,
        key: &str,
        value: &[u8],
        keep: usize,
    ) -> Result<(), StateError> {
        let mut connection = self.manager.clone();
        let keep = keep.max(1) as isize;
        let _: () = ::redis::pipe()
            .rpush(key, value)
            .ignore()
            .ltrim(key, -keep, -1)
            .ignore()
            .query_async(&mut connection)
            .await
            .map_err(self.failed("did not answer an RPUSH"))?;
        Ok(())
    }

    /// Every entry of the list at `key`, oldest first.
    pub async fn list(&self, key: &str) -> Result<Vec<Vec<u8>>, StateError> {
        let mut connection = self.manager.clone();
        connection
            .lrange(key, 0, -1)
            .await
            .map_err(self.failed("did not answer an LRANGE"))
    }

    /// The record at `key` and its stamp (kept at `stamp_key`, 0 before the first write).
    pub async fn stamped(
        &self,
        key: &str,
        stamp_key: &str,
    ) -> Result<(Option<Vec<u8>>, u64), StateError> {
        let mut connection = self.manager.clone();
        let (record, stamp): (Option<Vec<u8>>, Option<u64>) = ::redis::pipe()
            .get(key)
            .get(stamp_key)
            .query_async(&mut connection)
            .await
            .map_err(self.failed("did not answer a GET"))?;
        Ok((record, stamp.unwrap_or(0)))
    }

    /// The stamp at `stamp_key` (0 before the first write): it moves with every [`update`].
    ///
    /// [`update`]: Redis::update
    pub async fn stamp(&self, stamp_key: &str) -> Result<u64, StateError> {
        let mut connection = self.manager.clone();
        let stamp: Option<u64> = connection
            .get(stamp_key)
            .await
            .map_err(self.failed("did not answer a GET"))?;
        Ok(stamp.unwrap_or(0))
    }

    /// Changes the record at `key` with `change` atomically across every replica: read it
    /// with its stamp, change it, write it only if the stamp has not moved, else read again.
    /// `change` gets the record (or `None`) and returns the new one. Returns the new stamp.
    pub async fn update<F>(
        &self,
        key: &str,
        stamp_key: &str,
        change: &mut F,
    ) -> Result<u64, StateError>
    where
        F: FnMut(Option<Vec<u8>>) -> Result<Vec<u8>, StateError>,
    {
        let script = ::redis::Script::new(SWAP_SCRIPT);
        loop {
            let (record, stamp) = self.stamped(key, stamp_key).await?;
            let next = change(record)?;
            let shown = if stamp == 0 {
                String::new()
            } else {
                stamp.to_string()
            };
            let mut connection = self.manager.clone();
            let swapped: i64 = script
                .key(key)
                .key(stamp_key)
                .arg(shown)
                .arg(next)
                .invoke_async(&mut connection)
                .await
                .map_err(self.failed("did not answer an update"))?;
            if swapped >= 0 {
                return Ok(swapped as u64);
            }
        }
    }

    /// Waits for `work` from code that is not async (the handle store on a blocking task,
    /// the usage writer's thread, the authorization server's store): on a worker of the
    /// multi-threaded runtime the worker is handed over while it waits. A current-thread
    /// runtime cannot wait on itself: that is an error, never a deadlock.
    pub fn blocking<T>(
        &self,
        work: impl Future<Output = Result<T, StateError>>,
    ) -> Result<T, StateError> {
        use tokio::runtime::RuntimeFlavor;
        match tokio::runtime::Handle::try_current() {
            Ok(here) if here.runtime_flavor() == RuntimeFlavor::CurrentThread => {
                Err(StateError::Unreachable {
                    url: self.url.clone(),
                    what: "cannot be waited for",
                    reason: "called from a current-thread runtime".into(),
                })
            }
            Ok(_) => tokio::task::block_in_place(|| self.runtime.block_on(work)),
            Err(_) => self.runtime.block_on(work),
        }
    }
}

/// Hears `channel` until `hear` answers false (`Ok`) or the connection is lost (`Err`).
async fn listen<F>(
    client: &::redis::Client,
    channel: &str,
    hear: &mut F,
) -> ::redis::RedisResult<()>
where
    F: FnMut(&[u8]) -> bool,
{
    use futures_util::StreamExt;
    let opening = tokio::time::timeout(CONNECT_TIMEOUT, client.get_async_pubsub());
    let mut pubsub = opening.await.map_err(|_| {
        ::redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut))
    })??;
    pubsub.subscribe(channel).await?;
    let mut news = pubsub.into_on_message();
    while let Some(message) = news.next().await {
        if !hear(message.get_payload_bytes()) {
            return Ok(());
        }
    }
    Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset).into())
}

/// Pings the store every [`WATCH_EVERY`] while it is in use (ends when the last holder drops it).
fn spawn_watcher(redis: Weak<Redis>) {
    tokio::spawn(async move {
        let mut was_reachable = true;
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            let Some(redis) = redis.upgrade() else { return };
            let answered = redis.ping().await;
            match (&answered, was_reachable) {
                (Err(e), true) => tracing::warn!(error = %e, "the state store is unreachable"),
                (Ok(()), false) => {
                    tracing::info!(url = %redis.url, "the state store answers again")
                }
                _ => {}
            }
            was_reachable = answered.is_ok();
        }
    });
}
