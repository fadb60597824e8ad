//! The set of agents a run may address: validated cards with their selected endpoints.

use std::collections::BTreeMap;

use crate::SharedStr;
use crate::a2a::{
    AgentCard, Binding, CardError, CardSetError, Endpoint, select_endpoint, validate_cards,
};

/// One addressable agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentEntry {
    /// The card's name, shared by every request sent to the agent. Derived from the card when
    /// the entry is made, so not for anyone else to set.
    pub(crate) name: SharedStr,
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
            name: card.name.as_str().into(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn card(name: &str, binding: &str, streaming: bool) -> AgentCard {
        AgentCard::from_json_value(&json!({
            "name": name,
            "supportedInterfaces": [{"url": format!("http://{name}.test/a2a"),
                "protocolBinding": binding, "protocolVersion": "1.0"}],
            "capabilities": {"streaming": streaming},
        }))
        .expect("card parses")
    }

    #[test]
    fn one_card_is_checked_on_its_own() {
        let entry = AgentDirectory::entry(card("a", "JSONRPC", true), None).expect("usable");
        assert_eq!(entry.card.name, "a");
        assert!(entry.streaming);
        assert_eq!(entry.endpoint.url, "http://a.test/a2a");
        let plain = AgentDirectory::entry(card("b", "JSONRPC", false), None).expect("usable");
        assert!(!plain.streaming);

        let pigeon = AgentDirectory::entry(card("p", "CARRIER_PIGEON", false), None);
        assert!(
            matches!(&pigeon, Err(DirectoryError::Endpoint { agent, .. }) if agent == "p"),
            "{pigeon:?}"
        );
        let mut blank = card("x", "JSONRPC", false);
        blank.name = " ".into();
        assert!(matches!(
            AgentDirectory::entry(blank, None),
            Err(DirectoryError::Cards(_))
        ));
        let grpc_only = AgentDirectory::entry(card("g", "JSONRPC", false), Some(Binding::Grpc));
        assert!(matches!(grpc_only, Err(DirectoryError::Endpoint { .. })));
    }

    #[test]
    fn entries_are_inserted_replaced_and_removed_by_name() {
        let mut dir = AgentDirectory::new(vec![card("a", "JSONRPC", false)], None).unwrap();
        let b = AgentDirectory::entry(card("b", "JSONRPC", false), None).unwrap();
        assert_eq!(dir.insert(b), None);
        assert_eq!(dir.names().collect::<Vec<_>>(), ["a", "b"]);
        let b2 = AgentDirectory::entry(card("b", "JSONRPC", true), None).unwrap();
        let old = dir.insert(b2).expect("replaced");
        assert!(!old.streaming);
        assert!(dir.get("b").expect("b").streaming);
        assert_eq!(dir.len(), 2);
        assert_eq!(dir.remove("a").map(|e| e.card.name), Some("a".to_owned()));
        assert_eq!(dir.remove("a"), None);
        assert_eq!(dir.names().collect::<Vec<_>>(), ["b"]);
    }
}
