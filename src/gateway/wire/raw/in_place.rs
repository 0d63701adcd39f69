//! The carried result put back on the bytes: the message's members are read as the text they
//! are (no tree of the envelope, the placeholder or the result is built) and written again with
//! the carried text in place of the placeholder. The tree splice in `super` makes the same
//! answer; this one takes only the plain case and leaves anything else (a duplicate member, a
//! carried text that is no object) to it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::CARRIED;

/// The message with its carried result put back: the envelope's members as they were, then
/// the carried result's text and the placeholder's members it lacks (what rmcp added:
/// `resultType` for 2026-era clients; `_meta` only if it holds more than the mark). `None`
/// when the message is not the plain case.
pub(super) fn splice_carried(message: &[u8]) -> Option<Vec<u8>> {
    // One pass over the message: the result's and its `_meta`'s members are read as they come,
    // the carried text unescaped once; a second over the carried text, for its members' names.
    let envelope = Level::Envelope.read(&mut serde_json::Deserializer::from_slice(message))?;
    let result = envelope.only("result")?.members()?;
    let meta = result.only("_meta")?.members()?;
    let Member::Carried(carried) = meta.only(CARRIED)? else {
        return None;
    };
    let text = carried.trim_ascii();
    let own = Level::Flat.read(&mut serde_json::Deserializer::from_str(text))?;
    let open = text.strip_suffix('}')?;
    let mut out = Vec::with_capacity(message.len() + text.len());
    out.push(b'{');
    for (at, (key, value)) in envelope.0.iter().enumerate() {
        if at > 0 {
            out.push(b',');
        }
        write_key(&mut out, key);
        match value {
            Member::Raw(raw) => out.extend_from_slice(raw.get().as_bytes()),
            _ => write_result(&mut out, open, &own, result, meta),
        }
    }
    out.push(b'}');
    Some(out)
}

/// The carried text (an object, `open` without its closing brace) with the placeholder's
/// members it lacks after its own.
fn write_result(out: &mut Vec<u8>, open: &str, own: &Members, result: &Members, meta: &Members) {
    out.extend_from_slice(open.as_bytes());
    let rest: Vec<_> = meta.0.iter().filter(|(k, _)| k != CARRIED).collect();
    let mut first = own.0.is_empty();
    for (key, value) in &result.0 {
        if own.has(key) {
            continue;
        }
        if key == "_meta" && rest.is_empty() {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        write_key(out, key);
        match value {
            Member::Raw(raw) => out.extend_from_slice(raw.get().as_bytes()),
            _ => write_members(out, rest.iter().copied()),
        }
    }
    out.push(b'}');
}

/// `{members}`, their values as they were.
fn write_members<'a>(
    out: &mut Vec<u8>,
    members: impl IntoIterator<Item = &'a (Key<'a>, Member<'a>)>,
) {
    out.push(b'{');
    for (at, (key, value)) in members.into_iter().enumerate() {
        if at > 0 {
            out.push(b',');
        }
        write_key(out, key);
        if let Member::Raw(raw) = value {
            out.extend_from_slice(raw.get().as_bytes());
        }
    }
    out.push(b'}');
}

/// A member's name, quoted and escaped, and its colon.
fn write_key(out: &mut Vec<u8>, key: &Key) {
    match key {
        // Borrowed from the text unchanged: it held no escape, so it needs none.
        Cow::Borrowed(name) => {
            out.push(b'"');
            out.extend_from_slice(name.as_bytes());
            out.push(b'"');
        }
        // Writing a string into a Vec cannot fail.
        Cow::Owned(name) => drop(serde_json::to_writer(&mut *out, name)),
    }
    out.push(b':');
}

/// A member's name: borrowed from the text unless it holds an escape.
type Key<'a> = Cow<'a, str>;

/// A member's value: its text, or what was read of it.
enum Member<'a> {
    Raw(&'a RawValue),
    /// The result's or its `_meta`'s members.
    Object(Members<'a>),
    /// The carried result's text, unescaped.
    Carried(String),
}

impl<'a> Member<'a> {
    fn members(&self) -> Option<&Members<'a>> {
        match self {
            Member::Object(members) => Some(members),
            _ => None,
        }
    }
}

/// An object's members in their order.
struct Members<'a>(Vec<(Key<'a>, Member<'a>)>);

impl<'a> Members<'a> {
    fn has(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| k == key)
    }

    /// The value of `key`, when the object has it and no member twice (a tree keeps the last
    /// of two: that case is left to the tree).
    fn only(&self, key: &str) -> Option<&Member<'a>> {
        let names = &self.0;
        let unique = names
            .iter()
            .enumerate()
            .all(|(at, (k, _))| names[..at].iter().all(|(seen, _)| seen != k));
        if !unique {
            return None;
        }
        names.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// Which object is read: the member read further at each (the others are kept as text).
#[derive(Clone, Copy)]
enum Level {
    /// The message: its `result`.
    Envelope,
    /// The result: its `_meta`.
    Result,
    /// The `_meta`: the carried text.
    Meta,
    /// Any other object: every member as its text.
    Flat,
}

impl Level {
    /// The object `from` holds (and nothing after it).
    fn read<'de, R: serde_json::de::Read<'de>>(
        self,
        from: &mut serde_json::Deserializer<R>,
    ) -> Option<Members<'de>> {
        let members = self.deserialize(&mut *from).ok()?;
        from.end().ok()?;
        Some(members)
    }
}

impl<'de> DeserializeSeed<'de> for Level {
    type Value = Members<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Level {
    type Value = Members<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Vec::new();
        while let Some(Name(name)) = map.next_key::<Name<'de>>()? {
            let value = match (self, name.as_ref()) {
                (Level::Envelope, "result") => Member::Object(map.next_value_seed(Level::Result)?),
                (Level::Result, "_meta") => Member::Object(map.next_value_seed(Level::Meta)?),
                (Level::Meta, CARRIED) => Member::Carried(map.next_value()?),
                _ => Member::Raw(map.next_value()?),
            };
            members.push((name, value));
        }
        Ok(Members(members))
    }
}

/// A member's name, borrowed when it can be.
struct Name<'a>(Key<'a>);

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl<'de> Visitor<'de> for NameVisitor {
            type Value = Name<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member's name")
            }

            fn visit_borrowed_str<E>(self, name: &'de str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Borrowed(name)))
            }

            fn visit_str<E>(self, name: &str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Owned(name.to_string())))
            }
        }
        deserializer.deserialize_str(NameVisitor)
    }
}
