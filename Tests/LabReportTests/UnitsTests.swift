import LabReport
import Testing

@Suite("figures as people read them")
struct UnitsTests {
    @Test("bytes in binary units with three significant digits")
    func bytes() {
        #expect(Units.bytes(0) == "0 B")
        #expect(Units.bytes(1023) == "1023 B")
        #expect(Units.bytes(1536) == "1.50 KiB")
        #expect(Units.bytes(1_572_864) == "1.50 MiB")
        #expect(Units.bytes(12_900_000) == "12.3 MiB")
        #expect(Units.bytes(3_221_225_472) == "3.00 GiB")
        #expect(Units.mebibytes(40_055_193) == "38.2 MiB")
    }

    @Test("durations in ms, s, minutes and hours")
    func durations() {
        #expect(Units.duration(340) == "340 ms")
        #expect(Units.duration(1_240) == "1.24 s")
        #expect(Units.duration(12_500) == "12.5 s")
        #expect(Units.duration(65_000) == "1 m 05 s")
        #expect(Units.duration(3_720_000) == "1 h 02 m")
        #expect(Units.duration(-1_500) == "-1.50 s")
    }

    @Test("moments on the timeline as a clock, counts with thousands separators")
    func clockAndCount() {
        #expect(Units.clock(0) == "0:00")
        #expect(Units.clock(90_500) == "1:30")
        #expect(Units.clock(3_723_000) == "1:02:03")
        #expect(Units.count(999) == "999")
        #expect(Units.count(1_234_567) == "1,234,567")
        #expect(Units.count(-12_345) == "-12,345")
    }

    @Test("HTML escaping covers the five characters that matter")
    func escaping() {
        #expect(
            "<a href=\"x\">Tom & Jerry's</a>".htmlEscaped
                == "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;")
        #expect("n1 → n2".htmlEscaped == "n1 → n2")
    }
}
