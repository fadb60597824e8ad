//! An immutable string shared by reference count.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Serialize};

/// An immutable string whose clones share one allocation.
///
/// The names and texts a run hands out again and again (step and agent names, a subtask's
/// description, the execution id, the language hint) are `SharedStr`s: every request, result
/// and event that carries one holds the same text, so a clone costs a reference count, not an
/// allocation and a copy. It reads like a `&str` (it dereferences to one), compares with `str`,
/// `&str` and `String`, and converts into a `String` when an owned copy is wanted.
///
/// ```
/// use a2at_core::SharedStr;
///
/// let name = SharedStr::from("planner");
/// let again = name.clone();
/// assert_eq!(again, "planner");
/// assert!(name.starts_with("plan"));
/// let owned: String = (&name).into();
/// assert_eq!(owned, "planner");
/// ```
// Serialised as the plain string it holds (serde's `rc` support for `Arc<str>`).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SharedStr(Arc<str>);

impl SharedStr {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `a` and `b` share one allocation (clones of one another), not just equal text.
    pub fn ptr_eq(a: &SharedStr, b: &SharedStr) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

/// The empty text every default shares: a request or a window made empty (and there are
/// some for every subtask) then costs no allocation.
static EMPTY: LazyLock<SharedStr> = LazyLock::new(|| SharedStr(Arc::from("")));

impl Default for SharedStr {
    fn default() -> Self {
        EMPTY.clone()
    }
}

impl Deref for SharedStr {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SharedStr {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for SharedStr {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<&str> for SharedStr {
    fn from(text: &str) -> Self {
        SharedStr(Arc::from(text))
    }
}

impl From<String> for SharedStr {
    fn from(text: String) -> Self {
        SharedStr(Arc::from(text))
    }
}

impl From<&String> for SharedStr {
    fn from(text: &String) -> Self {
        SharedStr(Arc::from(text.as_str()))
    }
}

impl From<Box<str>> for SharedStr {
    fn from(text: Box<str>) -> Self {
        SharedStr(Arc::from(text))
    }
}

impl From<Cow<'_, str>> for SharedStr {
    fn from(text: Cow<'_, str>) -> Self {
        SharedStr(Arc::from(text))
    }
}

impl From<Arc<str>> for SharedStr {
    fn from(text: Arc<str>) -> Self {
        SharedStr(text)
    }
}

impl From<SharedStr> for Arc<str> {
    fn from(text: SharedStr) -> Self {
        text.0
    }
}

impl From<SharedStr> for String {
    fn from(text: SharedStr) -> Self {
        String::from(&*text.0)
    }
}

impl From<&SharedStr> for String {
    fn from(text: &SharedStr) -> Self {
        String::from(&*text.0)
    }
}

impl From<SharedStr> for serde_json::Value {
    fn from(text: SharedStr) -> Self {
        serde_json::Value::String(text.into())
    }
}

impl From<&SharedStr> for serde_json::Value {
    fn from(text: &SharedStr) -> Self {
        serde_json::Value::String(text.into())
    }
}

impl PartialEq<str> for SharedStr {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for SharedStr {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<String> for SharedStr {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<SharedStr> for str {
    fn eq(&self, other: &SharedStr) -> bool {
        *self == *other.0
    }
}

impl PartialEq<SharedStr> for &str {
    fn eq(&self, other: &SharedStr) -> bool {
        **self == *other.0
    }
}

impl PartialEq<SharedStr> for String {
    fn eq(&self, other: &SharedStr) -> bool {
        **self == *other.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_allocation_and_copies_do_not() {
        let a = SharedStr::from("step-1");
        let b = a.clone();
        assert!(SharedStr::ptr_eq(&a, &b));
        let c = SharedStr::from(String::from("step-1"));
        assert_eq!(a, c);
        assert!(!SharedStr::ptr_eq(&a, &c));
    }

    #[test]
    fn compares_with_every_string_form_both_ways() {
        let s = SharedStr::from("x");
        let (same, other) = (String::from("x"), String::from("y"));
        // Each impl is called by name: both directions and both answers.
        assert!(<SharedStr as PartialEq<str>>::eq(&s, "x"));
        assert!(!<SharedStr as PartialEq<str>>::eq(&s, "y"));
        assert!(<SharedStr as PartialEq<&str>>::eq(&s, &"x"));
        assert!(!<SharedStr as PartialEq<&str>>::eq(&s, &"y"));
        assert!(<SharedStr as PartialEq<String>>::eq(&s, &same));
        assert!(!<SharedStr as PartialEq<String>>::eq(&s, &other));
        assert!(<str as PartialEq<SharedStr>>::eq("x", &s));
        assert!(!<str as PartialEq<SharedStr>>::eq("y", &s));
        assert!(<&str as PartialEq<SharedStr>>::eq(&"x", &s));
        assert!(!<&str as PartialEq<SharedStr>>::eq(&"y", &s));
        assert!(<String as PartialEq<SharedStr>>::eq(&same, &s));
        assert!(!<String as PartialEq<SharedStr>>::eq(&other, &s));
        let (a, b) = (SharedStr::from("a"), SharedStr::from("b"));
        assert_eq!(a.cmp(&b), std::cmp::Ordering::Less);
    }

    #[test]
    fn reads_and_writes_as_a_plain_json_string() {
        let s = SharedStr::from("a\"b");
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(text, r#""a\"b""#);
        let back: SharedStr = serde_json::from_str(&text).unwrap();
        assert_eq!(back, s);
        let err = serde_json::from_str::<SharedStr>("1").unwrap_err();
        assert!(err.to_string().contains("expected a string"), "{err}");
        assert_eq!(format!("{s}|{s:?}"), "a\"b|\"a\\\"b\"");
    }

    #[test]
    fn converts_to_and_from_owned_and_shared_forms() {
        let s = SharedStr::from(Cow::Borrowed("t"));
        let owned: String = (&s).into();
        assert_eq!(owned, "t");
        let arc: Arc<str> = s.clone().into();
        assert_eq!(&*arc, "t");
        let back = SharedStr::from(Arc::clone(&arc));
        assert_eq!(back, "t");
        assert!(
            SharedStr::ptr_eq(&back, &s),
            "a shared text comes back without a copy"
        );
        assert_eq!(<SharedStr as AsRef<str>>::as_ref(&s), "t");
        assert_eq!(String::from(SharedStr::from(Box::<str>::from("u"))), "u");
        assert_eq!(SharedStr::default(), "");
        assert!(SharedStr::ptr_eq(
            &SharedStr::default(),
            &SharedStr::default()
        ));
        assert_eq!(SharedStr::from(&String::from("v")).as_str(), "v");
        let key: &str = std::borrow::Borrow::borrow(&s);
        assert_eq!(key, "t");
        assert_eq!(serde_json::Value::from(&s), serde_json::json!("t"));
        assert_eq!(serde_json::Value::from(s), serde_json::json!("t"));
    }
}
