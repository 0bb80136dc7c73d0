import CLinux
import CPacket
import Foundation

// peerd-lab-link --between IF1 IF2 --delay-ms D
//
// The delayed link of `peerd-lab` (docs/lab.md, "Faults"): copies every
// Ethernet frame between two interfaces, both ways, D ms after it came, in
// the order it came. A thread per direction receives and stamps frames, a
// second one sends each at its due time. This kernel has no netem, so the
// delay is made here, below IP: TCP, ARP and mDNS are all delayed alike.
// Exits 0 on SIGTERM or SIGINT, 1 when an interface goes away.

/// Frames of one direction waiting for their due time, oldest first.
final class DelayQueue: @unchecked Sendable {
    // Everything below is read and written with `condition` locked.
    private let condition = NSCondition()
    private var frames: [(dueNs: UInt64, bytes: [UInt8])] = []
    private var head = 0

    func append(dueNs: UInt64, bytes: [UInt8]) {
        condition.lock()
        frames.append((dueNs, bytes))
        condition.signal()
        condition.unlock()
    }

    /// Waits for the oldest frame and takes it.
    func take() -> (dueNs: UInt64, bytes: [UInt8]) {
        condition.lock()
        defer { condition.unlock() }
        while head == frames.count { condition.wait() }
        let frame = frames[head]
        head += 1
        if head > 1_024, head * 2 > frames.count {
            frames.removeFirst(head)
            head = 0
        }
        return frame
    }
}

func monotonicNs() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("peerd-lab-link: \(message)\n".utf8))
    exit(1)
}

let usage = "usage: peerd-lab-link --between IF1 IF2 --delay-ms D"
let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 5, arguments[0] == "--between", arguments[3] == "--delay-ms",
    let delayMs = UInt64(arguments[4])
else {
    FileHandle.standardError.write(Data("\(usage)\n".utf8))
    exit(2)
}
let names = [arguments[1], arguments[2]]
let sockets = names.map { name in
    let fd = peersync_packet_open(name)
    if fd < 0 { fail("\(name): \(String(cString: strerror(errno)))") }
    return fd
}

/// Starts the two threads that carry frames from `from` to `to`.
func relay(from: Int, to: Int) {
    let queue = DelayQueue()
    let (input, output, delayNs) = (sockets[from], sockets[to], delayMs * 1_000_000)
    let (inputName, outputName) = (names[from], names[to])
    Thread.detachNewThread {
        // 64 KiB GSO frames and their header fit.
        var buffer = [UInt8](repeating: 0, count: 256 * 1_024)
        while true {
            var outgoing: Int32 = 0
            let count = buffer.withUnsafeMutableBytes {
                peersync_packet_receive(input, $0.baseAddress, UInt($0.count), &outgoing)
            }
            if count < 0 {
                if errno == EINTR { continue }
                fail("receiving on \(inputName): \(String(cString: strerror(errno)))")
            }
            // A frame this relay sent out of `input` comes back as outgoing: not copied again.
            if outgoing != 0 { continue }
            queue.append(dueNs: monotonicNs() + delayNs, bytes: Array(buffer[0..<count]))
        }
    }
    Thread.detachNewThread {
        while true {
            let frame = queue.take()
            let now = monotonicNs()
            if frame.dueNs > now {
                var wait = timespec(
                    tv_sec: Int((frame.dueNs - now) / 1_000_000_000), tv_nsec: Int((frame.dueNs - now) % 1_000_000_000))
                var left = timespec()
                while nanosleep(&wait, &left) != 0 && errno == EINTR { wait = left }
            }
            let sent = frame.bytes.withUnsafeBytes { peersync_packet_send(output, $0.baseAddress, UInt($0.count)) }
            // A full queue or a frame the device refuses is a lost frame, as on a real link.
            if sent < 0 && (errno == ENXIO || errno == ENODEV || errno == ENETDOWN) {
                fail("sending on \(outputName): \(String(cString: strerror(errno)))")
            }
        }
    }
}

// SIGTERM and SIGINT go to a pipe this thread reads: then the relay stops.
var signalPipe: [Int32] = [0, 0]
guard pipe(&signalPipe) == 0 else { fail("pipe: \(String(cString: strerror(errno)))") }
_ = peersync_forward_signal(SIGTERM, signalPipe[1])
_ = peersync_forward_signal(SIGINT, signalPipe[1])
relay(from: 0, to: 1)
relay(from: 1, to: 0)
FileHandle.standardOutput.write(Data("peerd-lab-link: \(names[0]) <-> \(names[1]), \(delayMs) ms each way\n".utf8))
var byte: UInt8 = 0
while read(signalPipe[0], &byte, 1) < 0 && errno == EINTR {}
for fd in sockets { close(fd) }
exit(0)
