import Foundation
@_spi(DialectAuthoring) @testable import RealtimePusher
@_spi(DialectAuthoring) import RealtimeCore
import Testing

/// The sign-in sub-machine alone: its calls in, its actions out, no authorizer run and no connection.
@Suite("Pusher sign-in machine")
struct PusherSignInMachineTests {
    static let answer: JSONValue = ["auth": "k:sig", "user_data": #"{"id":"7"}"#, "connection_id": "1.1"]
    static let success: JSONValue = ["user_data": #"{"id":"7","user_info":{"name":"Ada"}}"#]

    /// A machine whose app call `1` has its authorization `serial` in flight.
    static func asked(_ vendor: PusherVendor = .pusher, serial: UInt64 = 5) -> PusherSignInMachine {
        var machine = PusherSignInMachine(vendor: vendor)
        var actions: [DialectAction] = []
        #expect(machine.requested(RequestID(1), canSign: true, actions: &actions))
        #expect(actions.isEmpty)
        machine.authorizing(serial: serial)
        return machine
    }

    /// A machine whose `*:signin` for call `1` went out and is unanswered.
    static func sent() -> PusherSignInMachine {
        var machine = asked()
        var actions: [DialectAction] = []
        machine.authorized(serial: 5, result: .success(answer), actions: &actions)
        return machine
    }

    /// The code of the first resolution when it is a failure.
    static func failedCode(_ actions: [DialectAction]) -> RealtimeError.Code? {
        if case .failure(let error)? = actions.resolutions.first?.1 { return error.code }
        return nil
    }

    @Test("without an authorizer the call fails with signInFailed and nothing is armed")
    func cannotSign() {
        var machine = PusherSignInMachine(vendor: .pusher)
        var actions: [DialectAction] = []
        #expect(!machine.requested(RequestID(1), canSign: false, actions: &actions))
        #expect(actions.resolutions.first?.0 == RequestID(1))
        #expect(Self.failedCode(actions) == .signInFailed)
        #expect(!machine.isArmed)
    }

    @Test("a newer call replaces a waiting one, which fails with operationFailed")
    func newerCallReplaces() {
        var machine = Self.asked()
        var actions: [DialectAction] = []
        #expect(machine.requested(RequestID(2), canSign: true, actions: &actions))
        #expect(actions.resolutions.map(\.0) == [RequestID(1)])
        #expect(Self.failedCode(actions) == .operationFailed)
    }

    @Test("the authorizer's answer sends *:signin once; a stale serial is dropped")
    func authorizedSendsSignin() {
        var machine = Self.asked()
        var actions: [DialectAction] = []
        machine.authorized(serial: 4, result: .success(Self.answer), actions: &actions)
        #expect(actions.isEmpty)
        #expect(!machine.awaitsServerAnswer)
        machine.authorized(serial: 5, result: .success(Self.answer), actions: &actions)
        #expect(actions.sentTexts.count == 1)
        #expect(sameJSON(actions.sentTexts.first ?? "",
                         ["event": "pusher:signin", "data": ["auth": "k:sig", "user_data": #"{"id":"7"}"#]]))
        #expect(machine.awaitsServerAnswer)
    }

    @Test("Bird signs in with member_data")
    func birdKey() {
        var machine = Self.asked(.bird)
        var actions: [DialectAction] = []
        machine.authorized(serial: 5, result: .success(Self.answer), actions: &actions)
        #expect(sameJSON(actions.sentTexts.first ?? "",
                         ["event": "bird:signin", "data": ["auth": "k:sig", "member_data": #"{"id":"7"}"#]]))
    }

    @Test("an answer without user_data or an authorizer error fails the call and disarms")
    func authorizerFailures() {
        for result: Result<JSONValue, RealtimeError> in [.success(["auth": "k:sig"]),
                                                          .failure(RealtimeError(.authorizationFailed, "403"))] {
            var machine = Self.asked()
            var actions: [DialectAction] = []
            machine.authorized(serial: 5, result: result, actions: &actions)
            #expect(actions.sentTexts.isEmpty)
            #expect(Self.failedCode(actions) == .signInFailed)
            #expect(!machine.isArmed)
        }
    }

    @Test("signin_success joins the user channel, resolves the call and delivers the identity")
    func succeeded() {
        var machine = Self.sent()
        var actions: [DialectAction] = []
        machine.succeeded(Self.success, actions: &actions)
        #expect(actions.sentTexts == [##"{"data":{"auth":"","channel":"#server-to-user-7"},"event":"pusher:subscribe"}"##])
        #expect(actions.resolutions.first?.0 == RequestID(1))
        #expect((try? actions.resolutions.first?.1.get()) == [["id": "7", "user_info": ["name": "Ada"]]])
        #expect(actions.delivered.map(\.name) == ["pusher:signin_success"])
        #expect(machine.userChannel == "#server-to-user-7")
        #expect(!machine.awaitsServerAnswer)

        // A second success answers nothing.
        actions = []
        machine.succeeded(Self.success, actions: &actions)
        #expect(actions.isEmpty)
    }

    @Test("a success without a usable id fails with signInFailed, keeping the protocol violation as detail")
    func unusableSuccess() {
        var machine = Self.asked()
        var actions: [DialectAction] = []
        machine.succeeded(["user_data": #"{"id":""}"#], actions: &actions)
        if case .failure(let error)? = actions.resolutions.first?.1 {
            #expect(error.code == .signInFailed)
            #expect(error.context.detail?.hasPrefix(RealtimeError.Code.protocolViolation.rawValue) == true)
        } else {
            Issue.record("the call must fail")
        }
        #expect(machine.userChannel == nil)
    }

    @Test("after a reconnect (no call waiting) a refusal is reported and the sign-in stays armed")
    func refusedAfterReconnect() {
        var machine = Self.sent()
        var actions: [DialectAction] = []
        machine.succeeded(Self.success, actions: &actions)
        machine.connectionEnded()
        #expect(machine.userChannel == nil)
        #expect(machine.isArmed)

        machine.authorizing(serial: 9)
        machine.authorized(serial: 9, result: .success(Self.answer), actions: &actions)
        #expect(machine.awaitsServerAnswer)
        actions = []
        machine.refused(message: "Invalid signature", data: ["message": "Invalid signature"], actions: &actions)
        #expect(actions.resolutions.isEmpty)
        #expect(actions.reportedErrors.map(\.code) == [.signInFailed])
        #expect(actions.reportedErrors.first?.context.serverPayload?["message"] == "Invalid signature")
        #expect(machine.isArmed)
        #expect(!machine.awaitsServerAnswer)
    }

    @Test("a cancelled call is not resolved; the success is still delivered")
    func cancelled() {
        var machine = Self.sent()
        var actions: [DialectAction] = []
        machine.cancel(RequestID(2))
        machine.cancel(RequestID(1))
        actions = []
        machine.succeeded(Self.success, actions: &actions)
        #expect(actions.resolutions.isEmpty)
        #expect(actions.delivered.count == 1)
    }

    @Test("failure(_:) types any cause as signInFailed and keeps a signInFailed as it is")
    func failureTyping() {
        let cause = RealtimeError(.authorizationFailed, "no", context: .init(httpStatus: 403, detail: "body"))
        let error = PusherSignInMachine.failure(cause)
        #expect(error.code == .signInFailed)
        #expect(error.context.httpStatus == 403)
        #expect(error.context.detail == "\(RealtimeError.Code.authorizationFailed.rawValue): body")
        #expect(PusherSignInMachine.failure(error) == error)
    }
}
