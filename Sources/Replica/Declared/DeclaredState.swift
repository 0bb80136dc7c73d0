/// The state of an entity of a declared type: its fields' values, by the
/// plan's field index, and what every declared entity has: its id, whether
/// it is deleted, and the time of the last event that changed it.
public struct DeclaredState: Hashable, Sendable {
    public var id: String
    var values: [DeclaredValue]
    public var deleted = false
    public var lastModifiedMs: Int64 = 0

    init(id: String, values: [DeclaredValue]) {
        self.id = id
        self.values = values
    }
}
