//! The engine's live card set: cards added, replaced and removed while runs go on, and the
//! cards that cannot be used, each with its reason.
//!
//! The set is a value (an [`AgentDirectory`] of the usable cards and the broken ones) behind a
//! lock; a change builds a new value and swaps it in. A run, a task call or an extension sender
//! takes the value current when it starts and keeps it, so a change never alters the endpoints
//! of what is already under way. Authentication plans are the exception: the transport looks
//! them up by agent name, so a replaced card's plan applies to every request sent after the
//! change (a changed plan never reuses the old plan's tokens), and a removed agent's last plan
//! stays for the runs that still hold its card.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use a2at_core::a2a::{AgentCard, Binding};
use a2at_core::agents::{AgentDirectory, AgentEntry, DirectoryError};
use a2at_core::auth::AuthPlan;
use a2at_core::workflow::{StepType, ValidatedWorkflow};
use serde_json::Value;

use crate::auth::Authenticator;

/// The code of a run or task call refused because an agent it needs has an unusable card.
pub const CARD_UNUSABLE: &str = "engine.card_unusable";

/// What is wrong with one card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CardErrorKind {
    /// The card does not parse or misses a required member (blank name, no `capabilities`, no
    /// `supportedInterfaces`, wrongly typed member).
    Invalid,
    /// None of the card's interfaces can be used (unknown binding, unusable URL, or not the
    /// engine's preferred binding).
    NoUsableInterface,
    /// The card's authentication cannot be set up: it requires credentials the engine does not
    /// have, or they conflict. Nothing would ever be sent unauthenticated, so the agent is
    /// unusable.
    Auth,
    /// [`Engine::add_card`](crate::Engine::add_card) for a name the engine already has.
    AlreadyPresent,
    /// [`Engine::replace_card`](crate::Engine::replace_card) for a name the engine does not
    /// have.
    NotPresent,
}

impl CardErrorKind {
    /// A stable name: `invalid`, `no_usable_interface`, `auth`, `already_present`,
    /// `not_present`.
    pub fn as_str(self) -> &'static str {
        match self {
            CardErrorKind::Invalid => "invalid",
            CardErrorKind::NoUsableInterface => "no_usable_interface",
            CardErrorKind::Auth => "auth",
            CardErrorKind::AlreadyPresent => "already_present",
            CardErrorKind::NotPresent => "not_present",
        }
    }
}

/// Why one card cannot be used (or a card change was refused): the agent it names and the
/// problem. The message names schemes and members, never a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("agent {agent:?}: {} card: {problem}", .kind.as_str())]
pub struct CardError {
    /// The agent (card name; empty when the card has none).
    pub agent: String,
    /// What kind of problem.
    pub kind: CardErrorKind,
    /// The problem, in words.
    pub problem: String,
}

impl CardError {
    fn new(agent: &str, kind: CardErrorKind, problem: impl Into<String>) -> CardError {
        CardError {
            agent: agent.to_owned(),
            kind,
            problem: problem.into(),
        }
    }
}

/// Parses a JSON card after the card normalisations (flat security schemes and the like, see
/// [`AgentCard::from_json_value`]). A card that does not parse is a [`CardErrorKind::Invalid`]
/// error naming its `name` member when it has one.
pub fn card_from_json(value: &Value) -> Result<AgentCard, CardError> {
    AgentCard::from_json_value(value).map_err(|e| {
        let name = value.get("name").and_then(Value::as_str).unwrap_or("");
        CardError::new(name, CardErrorKind::Invalid, e.to_string())
    })
}

/// One value of the card set.
#[derive(Debug, Clone, Default)]
pub(crate) struct CardSet {
    /// The usable cards.
    pub(crate) directory: Arc<AgentDirectory>,
    /// The unusable cards by agent name, each with why.
    pub(crate) broken: BTreeMap<String, CardError>,
}

impl CardSet {
    /// The first agent the workflow sends to whose card is unusable (steps in order; `SELF_LOOP`
    /// steps send nothing).
    pub(crate) fn unusable_in(&self, workflow: &ValidatedWorkflow) -> Option<&CardError> {
        if self.broken.is_empty() {
            return None;
        }
        workflow
            .workflow()
            .steps
            .iter()
            .filter(|step| step.step_type != StepType::SelfLoop)
            .flat_map(|step| &step.subtasks)
            .find_map(|sub| self.broken.get(sub.agent.as_str()))
    }
}

/// A card checked for use: its directory entry and authentication plan.
struct Checked {
    entry: AgentEntry,
    plan: AuthPlan,
}

/// Checks one card as the engine would use it.
fn check(
    card: AgentCard,
    preferred: Option<Binding>,
    auth: &Authenticator,
) -> Result<Checked, CardError> {
    let name = card.name.clone();
    let entry = AgentDirectory::entry(card, preferred).map_err(|e| match e {
        DirectoryError::Endpoint { source, .. } => {
            CardError::new(&name, CardErrorKind::NoUsableInterface, source.to_string())
        }
        other => CardError::new(&name, CardErrorKind::Invalid, other.to_string()),
    })?;
    let plan = auth
        .plan_for(&entry.card)
        .map_err(|problem| CardError::new(&name, CardErrorKind::Auth, problem))?;
    Ok(Checked { entry, plan })
}

/// The engine's live card set.
pub(crate) struct LiveCards {
    current: RwLock<Arc<CardSet>>,
    preferred: Option<Binding>,
}

impl LiveCards {
    /// Checks every card; a bad one becomes a broken entry (and a warning), never an error,
    /// except for set-wide problems (a blank or repeated name), which are. The plans of the
    /// usable cards go to `auth`.
    pub(crate) fn build(
        cards: Vec<AgentCard>,
        preferred: Option<Binding>,
        auth: &Authenticator,
    ) -> Result<LiveCards, DirectoryError> {
        let (set, plans) = set_of(cards, preferred, auth)?;
        install(auth, plans);
        Ok(LiveCards {
            current: RwLock::new(Arc::new(set)),
            preferred,
        })
    }

    /// The current value; runs keep the one they took.
    pub(crate) fn snapshot(&self) -> Arc<CardSet> {
        // A poisoned lock only means a panic while swapping: the value itself is always whole.
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Changes the set under the write lock (changes are serialised; readers never wait for
    /// the checks, which run before the lock is taken where they can).
    fn change<T>(&self, f: impl FnOnce(&CardSet) -> (Option<CardSet>, T)) -> T {
        let mut current = self.current.write().unwrap_or_else(|e| e.into_inner());
        let (next, out) = f(&current);
        if let Some(next) = next {
            *current = Arc::new(next);
        }
        out
    }

    /// Adds or replaces one card. `must_exist`: `Some(true)` for a replace, `Some(false)` for an
    /// add, `None` for either.
    pub(crate) fn put(
        &self,
        card: AgentCard,
        must_exist: Option<bool>,
        auth: &Authenticator,
    ) -> Result<(), CardError> {
        let name = card.name.clone();
        if name.trim().is_empty() {
            return Err(CardError::new(
                &name,
                CardErrorKind::Invalid,
                "the card has a blank name",
            ));
        }
        let checked = check(card, self.preferred, auth);
        self.change(|set| {
            let present = set.directory.get(&name).is_some() || set.broken.contains_key(&name);
            match must_exist {
                Some(false) if present => {
                    let e = CardError::new(
                        &name,
                        CardErrorKind::AlreadyPresent,
                        "the engine already has a card with this name (replace it instead)",
                    );
                    return (None, Err(e));
                }
                Some(true) if !present => {
                    let e = CardError::new(
                        &name,
                        CardErrorKind::NotPresent,
                        "the engine has no card with this name (add it instead)",
                    );
                    return (None, Err(e));
                }
                _ => {}
            }
            let mut next = set.clone();
            let mut directory = (*set.directory).clone();
            let out = match checked {
                Ok(Checked { entry, plan }) => {
                    auth.install(&name, plan);
                    directory.insert(entry);
                    next.broken.remove(&name);
                    tracing::info!(agent = %name, "agent card set");
                    Ok(())
                }
                Err(e) => {
                    directory.remove(&name);
                    tracing::warn!(agent = %name, error = %e, "agent card unusable");
                    next.broken.insert(name.clone(), e.clone());
                    Err(e)
                }
            };
            next.directory = Arc::new(directory);
            (Some(next), out)
        })
    }

    /// Removes the card named `name` (usable or broken); whether there was one.
    pub(crate) fn remove(&self, name: &str) -> bool {
        self.change(|set| {
            let mut next = set.clone();
            let mut directory = (*set.directory).clone();
            let had = directory.remove(name).is_some() | next.broken.remove(name).is_some();
            if !had {
                return (None, false);
            }
            next.directory = Arc::new(directory);
            tracing::info!(agent = %name, "agent card removed");
            (Some(next), true)
        })
    }

    /// Replaces the whole set as [`LiveCards::build`] checks one.
    pub(crate) fn replace_all(
        &self,
        cards: Vec<AgentCard>,
        auth: &Authenticator,
    ) -> Result<Vec<CardError>, DirectoryError> {
        // Checked before the lock is taken; the plans are installed under it, with the swap, so
        // that concurrent changes never leave one set's cards with another set's plans. The
        // plans of removed agents stay for the runs that still hold them.
        let (next, plans) = set_of(cards, self.preferred, auth)?;
        let errors = next.broken.values().cloned().collect();
        self.change(|_| {
            install(auth, plans);
            (Some(next), ())
        });
        Ok(errors)
    }
}

/// The plans of a card set's usable agents, to install when the set is swapped in.
type Plans = Vec<(String, AuthPlan)>;

fn install(auth: &Authenticator, plans: Plans) {
    for (agent, plan) in plans {
        auth.install(&agent, plan);
    }
}

/// Checks a set of cards: set-wide problems are an error, a bad card a broken entry. Returns
/// the set and the plans of its usable agents (not installed yet).
fn set_of(
    cards: Vec<AgentCard>,
    preferred: Option<Binding>,
    auth: &Authenticator,
) -> Result<(CardSet, Plans), DirectoryError> {
    set_wide_problems(&cards)?;
    let mut set = CardSet::default();
    let mut directory = AgentDirectory::default();
    let mut checked = Vec::new();
    for card in cards {
        match check(card, preferred, auth) {
            Ok(c) => checked.push(c),
            Err(e) => {
                tracing::warn!(agent = %e.agent, error = %e, "agent card unusable");
                set.broken.insert(e.agent.clone(), e);
            }
        }
    }
    let mut plans = Vec::with_capacity(checked.len());
    for Checked { entry, plan } in checked {
        plans.push((entry.card.name.clone(), plan));
        directory.insert(entry);
    }
    set.directory = Arc::new(directory);
    Ok((set, plans))
}

/// A blank or repeated name: no card can be blamed alone, so the set is refused.
fn set_wide_problems(cards: &[AgentCard]) -> Result<(), DirectoryError> {
    use a2at_core::a2a::{CardProblem, validate_cards};
    match validate_cards(cards) {
        Ok(()) => Ok(()),
        Err(mut e) => {
            e.problems.retain(|p| {
                matches!(
                    p,
                    CardProblem::BlankName { .. } | CardProblem::DuplicateName { .. }
                )
            });
            if e.problems.is_empty() {
                Ok(())
            } else {
                Err(DirectoryError::Cards(e))
            }
        }
    }
}
