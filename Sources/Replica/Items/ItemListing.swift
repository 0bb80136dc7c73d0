extension EventLog {
    /// Every item's folded state as its canonical JSON, ordered by name,
    /// then id; deleted items only with `includeDeleted`. The texts are the
    /// stored ones, only parsed for the name and the deleted flag, so a list
    /// of 20,000 items costs a read and a parse, not a decode and encode of
    /// each (`GET /items`).
    public func itemStates(includeDeleted: Bool) throws -> [String] {
        var listed: [(name: String, id: String, json: String)] = []
        for (id, json) in try states(entityType: Item.entityType) {
            guard case .object(let fields) = try JSONParser.parse(json) else {
                throw EventLogError.corrupt(path: path, reason: "stored item \(id) is not a JSON object")
            }
            if !includeDeleted, case .bool(true)? = fields["deleted"] { continue }
            guard case .string(let name)? = fields["name"] else {
                throw EventLogError.corrupt(path: path, reason: "stored item \(id) has no name")
            }
            listed.append((name, id, json))
        }
        listed.sort { ($0.name, $0.id) < ($1.name, $1.id) }
        return listed.map(\.json)
    }
}
