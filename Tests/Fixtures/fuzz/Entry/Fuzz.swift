import Foundation
import RealtimeCore
import RealtimeFuzzing

// libFuzzer calls these; its own `main` (linked by `--sanitize=fuzzer`) parses the flags and drives them.
// One binary holds every target so that the ASan+fuzzer build links once; REALTIME_FUZZ_TARGET picks one.

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<Int32>,
                             _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    let name = ProcessInfo.processInfo.environment["REALTIME_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("set REALTIME_FUZZ_TARGET to one of: \(names)\n".utf8))
        exit(2)
    }
    FuzzTarget.selected.withLock { $0 = target }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    FuzzTarget.selected.withLock { $0 }?.run(UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size))
    return 0
}
