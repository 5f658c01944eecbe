//! Building the runtime: the SPDP data the participant announces, the engine (standard
//! SPDP/SEDP or a discovery-server client) and the adapter's tables.

use super::{DiscoveryMode, DiscoveryOptions, DiscoveryRuntime};
use crate::bounds::{Budgets, EventFanout};
use crate::builtin::Discovered;
use crate::qos::DomainParticipantQos;
use crate::transport::Transports;
use std::collections::HashMap;
use std::time::Instant;
use tessera_rtps::discovery::{
    BuiltinEndpointSet, DiscoveryEngine, DiscoveryServerClient, DsClientConfig, LocalMatcher,
    LocatorSelector, RemoteServer, SimpleDiscovery, SimpleDiscoveryConfig, SpdpParticipantData,
    TypeLookupService,
};
use tessera_rtps::types::{GuidPrefix, Locator, Locators};

/// The shortest steady-state SPDP period, however short the lease.
const MIN_SPDP_PERIOD: std::time::Duration = std::time::Duration::from_millis(100);

/// The engine picks peers' locators the way user endpoints do: those of our most preferred
/// transport that reaches any.
impl LocatorSelector for Transports {
    fn select(&self, announced: &[Locator]) -> Locators {
        Transports::select(self, announced)
    }
}

impl DiscoveryRuntime {
    /// Discovery as `mode` says (standard SPDP/SEDP, or a discovery-server client) for a
    /// participant with these transports.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        prefix: GuidPrefix,
        domain_id: u32,
        qos: &DomainParticipantQos,
        transport: &Transports,
        options: DiscoveryOptions,
        mode: &DiscoveryMode,
        budgets: &Budgets,
        now: Instant,
    ) -> Self {
        let allow_multicast = options.allow_multicast;
        let mut data = SpdpParticipantData::new(prefix);
        data.domain_id = Some(domain_id);
        for l in transport.locators() {
            data.default_unicast_locators.push(l.default_unicast);
            // Without multicast data, peers must not send user data to our group either.
            if allow_multicast.for_data() {
                data.default_multicast_locators.extend(l.default_multicast);
            }
            data.metatraffic_unicast_locators
                .push(l.metatraffic_unicast);
            data.metatraffic_multicast_locators
                .extend(l.metatraffic_multicast);
        }
        data.lease_duration = options.lease;
        // Only what we implement: SPDP and the SEDP publication/subscription endpoints, and the
        // server half of the TypeLookup service when we announce type information.
        data.builtin_endpoints = BuiltinEndpointSet::TESSERA_DEFAULT;
        if options.type_information {
            data.builtin_endpoints.0 |= BuiltinEndpointSet::TYPE_LOOKUP_ALL;
        }
        data.user_data = qos.user_data.0.clone();
        if let DiscoveryMode::Client(servers) = mode {
            let config = DsClientConfig {
                participant: data,
                servers: servers
                    .iter()
                    .map(|s| RemoteServer {
                        id: s.id,
                        locators: [match s.address {
                            std::net::SocketAddr::V4(a) => Locator::udpv4(*a.ip(), a.port()),
                            std::net::SocketAddr::V6(a) => Locator::udpv6(*a.ip(), a.port()),
                        }]
                        .into_iter()
                        .collect(),
                    })
                    .collect(),
                shared_reassembly: Some(budgets.reassembly.clone()),
                shared_buffered: Some(budgets.out_of_order.clone()),
                wall_clock_nanos: crate::publication::now_nanos(),
            };
            let engine = Box::new(DiscoveryServerClient::new(config, now));
            return Self::with_engine(prefix, engine, transport, options, budgets);
        }
        let mut config = SimpleDiscoveryConfig::new(
            data,
            transport.spdp_destinations(),
            Box::new(transport.clone()),
        );
        // The SEDP readers draw from the participant's byte pools like user readers do.
        config.shared_reassembly = Some(budgets.reassembly.clone());
        config.shared_buffered = Some(budgets.out_of_order.clone());
        config.wall_clock_nanos = crate::publication::now_nanos();
        // Three announcements per lease at least, so one lost datagram does not end it.
        config.period = config.period.min(options.lease / 3).max(MIN_SPDP_PERIOD);
        // The start-up burst must not leave a longer gap than the period either.
        let period = config.period;
        let mut previous = std::time::Duration::ZERO;
        config.startup = config
            .startup
            .iter()
            .copied()
            .take_while(|&at| {
                let fits = at.saturating_sub(previous) <= period;
                previous = at;
                fits
            })
            .collect();
        let engine = Box::new(SimpleDiscovery::new(config, now));
        Self::with_engine(prefix, engine, transport, options, budgets)
    }

    /// The adapter over any engine (a discovery-server client plugs in here).
    pub fn with_engine(
        prefix: GuidPrefix,
        engine: Box<dyn DiscoveryEngine>,
        transport: &Transports,
        options: DiscoveryOptions,
        budgets: &Budgets,
    ) -> Self {
        let allow_multicast = options.allow_multicast;
        DiscoveryRuntime {
            prefix,
            engine,
            local: (!options.ignore_local).then(LocalMatcher::new),
            participants: HashMap::new(),
            watchers: EventFanout::new(budgets.events_dropped.clone()),
            default_unicast: transport.default_unicast(),
            own_locators: transport.default_unicast().into_iter().take(1).collect(),
            reader_multicast: if allow_multicast.for_data() {
                transport
                    .locators()
                    .iter()
                    .filter_map(|l| l.default_multicast)
                    .collect()
            } else {
                Vec::new()
            },
            allow_multicast,
            transport: transport.clone(),
            automatic_leases: Vec::new(),
            types: HashMap::new(),
            type_lookup: options.type_information.then(|| {
                TypeLookupService::new(prefix, crate::publication::now_nanos(), Instant::now())
            }),
            local_types: HashMap::new(),
            pending: HashMap::new(),
            refused: Default::default(),
            seen: Discovered::default(),
        }
    }
}
