import Simulator
import Testing

@Suite("Simulator engine")
struct EngineTests {
    @Test("The agenda takes the earliest first, and at one time the first scheduled")
    func agendaOrder() {
        var queue = EventQueue<String>()
        for (name, time) in [("c", 5), ("a", 1), ("d", 5), ("b", 3), ("e", 5)] { queue.schedule(name, at: Int64(time)) }
        var taken: [String] = []
        while let (_, name) = queue.next() { taken.append(name) }
        #expect(taken == ["a", "b", "c", "d", "e"])
    }

    @Test("One seed gives one stream of numbers, another seed another")
    func seededRandom() {
        var first = SimulationRandom(seed: 42)
        var again = SimulationRandom(seed: 42)
        var other = SimulationRandom(seed: 43)
        let a = (0..<8).map { _ in first.next() }
        #expect(a == (0..<8).map { _ in again.next() })
        #expect(a != (0..<8).map { _ in other.next() })
    }

    @Test("A random scenario is a function of its seed")
    func scenarioFromSeed() {
        let scenario = Scenario.random(seed: 99)
        #expect(scenario.summary == Scenario.random(seed: 99).summary)
        #expect((3...20).contains(scenario.replicaCount))
        #expect(scenario.clockSkewMs.count == scenario.replicaCount)
    }
}
