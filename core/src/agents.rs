//! The set of agents a run may address: validated cards with their selected endpoints.

use std::collections::BTreeMap;

use crate::a2a::{
    AgentCard, Binding, CardError, CardSetError, Endpoint, select_endpoint, validate_cards,
};

/// One addressable agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentEntry {
    /// The card as given.
    pub card: AgentCard,
    /// The interface chosen for it (a2a-wire §7.1).
    pub endpoint: Endpoint,
    /// Whether sends use `SendStreamingMessage` (`capabilities.streaming`).
    pub streaming: bool,
}

/// Why a set of cards cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DirectoryError {
    /// The card set is invalid.
    #[error(transparent)]
    Cards(#[from] CardSetError),
    /// No usable interface for an agent.
    #[error("agent {agent}: {source}")]
    Endpoint {
        /// The agent.
        agent: String,
        /// Why.
        source: CardError,
    },
}

/// Validated cards keyed by agent name; built once and shared by many runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentDirectory {
    agents: BTreeMap<String, AgentEntry>,
}

impl AgentDirectory {
    /// Validates the cards and selects each agent's endpoint, optionally preferring a binding.
    pub fn new(cards: Vec<AgentCard>, preferred: Option<Binding>) -> Result<Self, DirectoryError> {
        validate_cards(&cards)?;
        let mut agents = BTreeMap::new();
        for card in cards {
            let entry = AgentDirectory::entry(card, preferred)?;
            agents.insert(entry.card.name.clone(), entry);
        }
        Ok(AgentDirectory { agents })
    }

    /// Validates one card on its own (name, capabilities, interfaces) and selects its endpoint,
    /// as [`AgentDirectory::new`] does for each card of a set.
    pub fn entry(
        card: AgentCard,
        preferred: Option<Binding>,
    ) -> Result<AgentEntry, DirectoryError> {
        validate_cards(std::slice::from_ref(&card))?;
        let endpoint =
            select_endpoint(&card, preferred).map_err(|source| DirectoryError::Endpoint {
                agent: card.name.clone(),
                source,
            })?;
        let streaming = card.capabilities.streaming.unwrap_or(false);
        Ok(AgentEntry {
            card,
            endpoint,
            streaming,
        })
    }

    /// Adds `entry` under its card's name, returning the entry it replaces. Directories are
    /// values: a host that changes its agents builds a new one and swaps it in, so runs holding
    /// the old one keep it.
    pub fn insert(&mut self, entry: AgentEntry) -> Option<AgentEntry> {
        self.agents.insert(entry.card.name.clone(), entry)
    }

    /// Removes the agent named `name`, returning its entry.
    pub fn remove(&mut self, name: &str) -> Option<AgentEntry> {
        self.agents.remove(name)
    }

    /// A directory of one agent whose entry is already built (a machine's own view of it).
    pub(crate) fn single(entry: AgentEntry) -> AgentDirectory {
        AgentDirectory {
            agents: BTreeMap::from([(entry.card.name.clone(), entry)]),
        }
    }

    /// The agent named `name`.
    pub fn get(&self, name: &str) -> Option<&AgentEntry> {
        self.agents.get(name)
    }

    /// Agent names in sorted order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.agents.keys().map(String::as_str)
    }

    /// Number of agents.
    pub fn len(&self) -> usize {
        self.agents.len()
    }

    /// Whether there are no agents.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }
}
