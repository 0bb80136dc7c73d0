extension Domain {
    /// A declared domain (docs/domains.md): its events decode, apply and
    /// its states encode through the compiled `plan`, and a local payload
    /// is checked strictly against the declaration.
    ///
    /// ```swift
    /// var options = EventLog.Options()
    /// options.domains.append(Domain(declared: try FoldPlan(DomainDeclaration(json: declaration))))
    /// ```
    public init(declared plan: FoldPlan) {
        entityType = plan.entityType
        self.plan = plan
        decodeState = { entityID, stateJSON in
            guard var state = stateJSON.flatMap(plan.decodeState) else { return plan.initialState(id: entityID) }
            state.id = entityID
            return state
        }
        applyEvents = { state, events, poison in
            // The log only hands back states this domain made.
            var entity = state as! DeclaredState
            for event in events {
                guard let decoded = plan.decode(event.payload) else {
                    poison.append(event.eventID)
                    continue
                }
                plan.apply(decoded, to: &entity, timeMs: event.timeMs)
            }
            return entity
        }
        encodeState = { state in plan.encode(state as! DeclaredState) }
        validatePayload = { payload in try plan.validate(payload) }
        decodesFast = { payload in plan.decode(payload) != nil }
    }
}
