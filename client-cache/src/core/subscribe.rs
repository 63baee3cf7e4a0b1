//! Subscriptions: the match rules that bring the service's signals, bound to its current
//! owner's unique name (so a forger's signals never reach the cache), built with zbus's typed
//! [`zbus::MatchRule`] builder and replaced whenever the owner or the load's scope changes.

use zbus::{MatchRule, message::Type};

use super::{BUS, BUS_PATH, Call, Core, OM, PROPS, Scope, decode::ErrorReply};
use crate::debug::WarningKind;

/// One match rule the cache added.
pub(super) type Rule = MatchRule<'static>;

/// The rule for the service's `NameOwnerChanged` (only its own name, as `arg0`).
pub(super) fn name_owner_rule(service: &str) -> zbus::Result<Rule> {
    MatchRule::builder()
        .msg_type(Type::Signal)
        .sender(BUS)
        .path(BUS_PATH)
        .interface(BUS)
        .member("NameOwnerChanged")
        .arg(0, service)
        .build()
        .map(MatchRule::into_owned)
}

impl Core {
    /// The rules for `owner`'s signals, for the current scope: the ObjectManager's signals and
    /// `PropertiesChanged` (of one object, or of every object under the manager), and the
    /// refresh signals of the fetches. None on a peer-to-peer connection (no bus to ask).
    pub(super) fn owner_rules(&mut self, owner: &str) -> Vec<Rule> {
        if !self.bus {
            return Vec::new();
        }
        let om = self.cfg.manager_path.as_str();
        let signal = || MatchRule::builder().msg_type(Type::Signal).sender(owner);
        let mut rules = Vec::new();
        match &self.cfg.scope {
            Scope::Path(p) => {
                rules.push(
                    signal()
                        .interface(OM)
                        .path(om)
                        .arg_path(0, p.as_str())
                        .build(),
                );
                rules.push(
                    signal()
                        .interface(PROPS)
                        .member("PropertiesChanged")
                        .path(p.as_str())
                        .build(),
                );
            }
            _ => {
                rules.push(signal().interface(OM).path(om).build());
                let props = signal().interface(PROPS).member("PropertiesChanged");
                // `path_namespace='/'` is what no rule at all means, and some buses refuse it.
                let props = if om == "/" {
                    props
                } else {
                    props.path_namespace(om)
                };
                rules.push(props.build());
            }
        }
        for f in &self.cfg.fetches {
            if let Some(member) = &f.refresh {
                rules.push(
                    signal()
                        .interface(f.interface.as_str())
                        .member(member.as_str())
                        .build(),
                );
            }
        }
        let mut built = Vec::with_capacity(rules.len());
        for rule in rules {
            match rule {
                Ok(rule) => built.push(rule.into_owned()),
                Err(e) => self.rep.warn(
                    WarningKind::CallFailed,
                    format_args!("cannot build a match rule for {owner}: {e}"),
                ),
            }
        }
        built
    }

    /// Replaces the current match rules with `rules` (added only on a bus; a p2p peer has none).
    pub(super) fn resubscribe(&mut self, rules: Vec<Rule>) {
        self.unsubscribe();
        if self.bus {
            for rule in &rules {
                self.call_bus("AddMatch", &rule.to_string(), Call::AddMatch);
            }
            self.rules = rules;
        }
    }

    /// Removes the current match rules.
    pub(super) fn unsubscribe(&mut self) {
        for rule in std::mem::take(&mut self.rules) {
            self.call_bus("RemoveMatch", &rule.to_string(), Call::RemoveMatch);
        }
    }

    /// The bus's reply to `AddMatch` or `RemoveMatch`.
    pub(super) fn on_match_reply(
        &mut self,
        call: &Call,
        generation: u64,
        error: Option<&ErrorReply>,
    ) {
        let Some(error) = error else {
            return;
        };
        match call {
            // The bus drops rules naming a unique name that left: nothing to remove then.
            Call::RemoveMatch => self.rep.trace(format_args!("RemoveMatch: {error}")),
            // Without its subscription the cache would not follow the service: the load
            // fails (a rule of an older owner no longer matters).
            _ if generation == self.generation => {
                self.fail(call, BUS, BUS_PATH, error.cause());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{FetchSpec, test_support::*};

    fn rules_sent(core: &mut Core) -> Vec<Rule> {
        core.out
            .drain(..)
            .filter(|m| m.header().member().is_some_and(|m| m == "AddMatch"))
            .map(|m| {
                let (s,): (String,) = m.body().deserialize().unwrap();
                MatchRule::try_from(s.as_str()).unwrap().into_owned()
            })
            .collect()
    }

    #[test]
    fn the_name_owner_rule_matches_only_the_service_s_changes() {
        let rule = name_owner_rule(SERVICE).unwrap();
        assert!(
            rule.matches(&name_owner_changed(SERVICE, "", OWNER))
                .unwrap()
        );
        assert!(
            !rule
                .matches(&name_owner_changed("org.other", "", OWNER))
                .unwrap()
        );
        assert_eq!(
            rule.to_string(),
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',\
             member='NameOwnerChanged',path='/org/freedesktop/DBus',arg0='org.example.Service'"
        );
    }

    #[test]
    fn owner_rules_match_the_owner_s_signals_and_nothing_else() {
        let mut cfg = config();
        cfg.manager_path = "/org/example".into();
        cfg.fetches.push(FetchSpec {
            interface: "org.example.Settings".into(),
            method: "GetSettings".into(),
            refresh: Some("Updated".into()),
            refresh_on: None,
        });
        let mut core = bus_core(cfg);
        core.start();
        take_call(&mut core, "AddMatch");
        answer_name_owner(&mut core, OWNER);
        let rules = rules_sent(&mut core);
        assert_eq!(rules.len(), 3, "{rules:?}");
        let matched = |m: &zbus::Message| rules.iter().any(|r| r.matches(m).unwrap());
        let changed = |sender, path: &str| {
            properties_changed_from(sender, path, "org.example.I", &[("A", 1u32)], &[])
        };
        assert!(matched(&changed(OWNER, "/org/example/o/1")));
        // Another sender, or an object outside the manager's namespace: not subscribed.
        assert!(!matched(&changed(":1.99", "/org/example/o/1")));
        assert!(!matched(&changed(OWNER, "/elsewhere")));
        let added = signal("/org/example", OM, "InterfacesAdded")
            .sender(OWNER)
            .build(&(
                zbus::ObjectPath::try_from("/org/example/o/2").unwrap(),
                std::collections::HashMap::<
                    String,
                    std::collections::HashMap<String, zbus::Variant<'_>>,
                >::new(),
            ))
            .unwrap();
        assert!(matched(&added));
        let updated = signal("/org/example/s/1", "org.example.Settings", "Updated")
            .sender(OWNER)
            .build(&())
            .unwrap();
        assert!(matched(&updated));
    }

    #[test]
    fn a_path_scope_subscribes_to_that_object_only() {
        let mut cfg = config();
        cfg.scope = Scope::Path("/o/7".into());
        let mut core = bus_core(cfg);
        core.start();
        take_call(&mut core, "AddMatch");
        answer_name_owner(&mut core, OWNER);
        let rules = rules_sent(&mut core);
        let matched = |m: &zbus::Message| rules.iter().any(|r| r.matches(m).unwrap());
        let changed =
            |path: &str| properties_changed_from(OWNER, path, "org.example.I", &[("A", 1u32)], &[]);
        assert!(matched(&changed("/o/7")));
        assert!(!matched(&changed("/o/8")));
        assert!(
            rules
                .iter()
                .any(|r| r.to_string().contains("arg0path='/o/7'"))
        );
    }

    #[test]
    fn a_refused_add_match_fails_the_load() {
        let mut core = bus_core(config());
        core.start();
        let add = take_call(&mut core, "AddMatch");
        core.handle(&error_to(
            &add,
            BUS,
            "org.freedesktop.DBus.Error.LimitsExceeded",
        ));
        core.commit();
        let failure = core.failure.take().expect("the load failed");
        assert_eq!(failure.method, "DBus.AddMatch");
        assert_eq!(
            failure.error_name(),
            Some("org.freedesktop.DBus.Error.LimitsExceeded")
        );
        assert!(matches!(
            drain(&mut core).as_slice(),
            [Event::LoadFailed(_)]
        ));
    }

    #[test]
    fn peer_to_peer_has_no_rules() {
        let mut core = Core::new(config(), false);
        core.start();
        assert_eq!(sent_members(&mut core), ["GetManagedObjects"]);
        assert!(core.owner_rules("").is_empty());
    }
}
