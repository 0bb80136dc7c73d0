/// The Swift `Item` domain written as a declaration (docs/domains.md
/// "Item, declared"): the differential tests fold random histories with
/// both and require the same states, and `peerd-bench domains` races them.
extension DomainDeclaration {
    /// `Item` declared as entity type `entityType` (`item` to stand in for
    /// the Swift domain in a test or bench log; any other to sit beside it),
    /// at `version`.
    public static func itemTwin(entityType: String = Item.entityType, version: Int64 = 1) -> String {
        """
        {"entity_type":"\(entityType)","version":\(version),
         "fields":{"name":{"type":"string"},"quantity":{"type":"integer"},"note":{"type":"string","nullable":true}},
         "events":{
          "Created":{"fields":{"name":{"type":"string"},"quantity":{"type":"integer"}},
                     "effects":[{"set":"name","from":"name"},{"set":"quantity","from":"quantity"}]},
          "Renamed":{"fields":{"name":{"type":"string"}},"effects":[{"set":"name","from":"name"}]},
          "QuantityChanged":{"fields":{"quantity":{"type":"integer"}},"effects":[{"set":"quantity","from":"quantity"}]},
          "NoteChanged":{"fields":{"note":{"type":"string","nullable":true}},"effects":[{"set":"note","from":"note"}]},
          "Deleted":{"effects":[{"delete":true}]}}}
        """
    }
}
