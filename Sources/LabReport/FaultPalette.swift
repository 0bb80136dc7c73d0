/// The colour of each fault kind on the timeline and in its legend.
enum FaultPalette {
    /// The known kinds (LabReport.Fault.kind), in the legend's order, with their colours.
    static let known: [(kind: String, colour: String)] = [
        ("partition", "#f59e0b"),
        ("loss", "#ef4444"),
        ("rate", "#a855f7"),
        ("delay", "#0ea5e9"),
        ("kill", "#be123c"),
        ("stop", "#64748b"),
        ("avahi", "#14b8a6"),
        ("clock", "#84cc16"),
        ("restore", "#ec4899"),
    ]

    /// For a kind the palette does not know.
    static let other = "#6b7280"

    /// The colour of `kind`.
    static func colour(of kind: String) -> String {
        known.first { $0.kind == kind }?.colour ?? other
    }

    /// The kinds present in `faults`, known ones in the palette's order, then others by name.
    static func kinds(in faults: [LabReport.Fault]) -> [String] {
        let present = Set(faults.map(\.kind))
        return known.map(\.kind).filter(present.contains) + present.subtracting(known.map(\.kind)).sorted()
    }
}
