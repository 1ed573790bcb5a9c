import ChatKit
import Foundation
import Observation
import Realtime

/// A sketch of a chat screen's view model over ChatKit, for SwiftUI: the messages, the connection state and a
/// send action, on the main actor.
///
/// The session delivers on the main queue (`SessionOptions(delivery: .main)`), so its handlers, which are
/// `@Sendable` closures, enter the main actor with `MainActor.assumeIsolated` instead of hopping with a task.
/// The model holds the session; releasing the model closes the connection.
///
/// ```swift
/// let model = ChatViewModel(user: "alice") { options in
///     .socketIO(url: URL(string: "https://chat.example.com")!, options: options)
/// }
/// ```
///
/// Observation is not tied to SwiftUI, so the model builds (and is type-checked) on Linux as well; the view
/// below is built only where SwiftUI exists.
@MainActor @Observable
public final class ChatViewModel {
    public private(set) var messages: [ChatMessage] = []
    public private(set) var state: ConnectionState = .initialized
    /// The last error worth showing, cleared by the next successful send.
    public private(set) var problem: String?
    /// The text field's contents.
    public var draft = ""
    public let user: String

    @ObservationIgnored private let connection: ChatConnection
    /// The handlers' target; ChatKit's handlers hold it weakly, so the model keeps it.
    @ObservationIgnored private var transcript: ChatTranscript?

    /// - Parameter connect: builds the connection, for whichever backend the app uses, with the options it is
    ///   given (main-queue delivery); ChatKit's factories fit.
    public init(user: String, connect: (SessionOptions) -> ChatConnection) {
        self.user = user
        connection = connect(SessionOptions(delivery: .main))
        // Handlers run on the main queue: they may enter the main actor synchronously.
        let transcript = ChatTranscript { [weak self] entry in
            MainActor.assumeIsolated { self?.apply(entry) }
        }
        transcript.attach(to: connection)
        self.transcript = transcript
        connection.session.onStateChange { [weak self] _, new in
            MainActor.assumeIsolated { self?.state = new }
        }
    }

    private func apply(_ entry: ChatTranscript.Entry) {
        switch entry {
        case .message(let message): messages.append(message)
        case .joined(let member): messages.append(ChatMessage(author: "·", text: "\(member) joined"))
        case .error(let error): problem = error
        }
    }

    public func start() {
        connection.session.start()
    }

    public func send() async {
        let text = draft.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return }
        draft = ""
        do {
            try await connection.post(ChatMessage(author: user, text: text))
            problem = nil
        } catch {
            problem = "not sent: \(error)"
            draft = text
        }
    }

    public func stop() {
        connection.session.disconnect()
    }
}

#if canImport(SwiftUI)
import SwiftUI

/// The screen: the state, the messages, a field and a button.
public struct ChatView: View {
    @State private var model: ChatViewModel

    public init(model: ChatViewModel) {
        _model = State(initialValue: model)
    }

    public var body: some View {
        VStack(alignment: .leading) {
            Text(String(describing: model.state)).font(.caption).foregroundStyle(.secondary)
            List(Array(model.messages.enumerated()), id: \.offset) { _, message in
                Text("\(message.author): \(message.text)")
            }
            if let problem = model.problem {
                Text(problem).font(.caption).foregroundStyle(.red)
            }
            HStack {
                TextField("Message", text: $model.draft)
                    .onSubmit { Task { await model.send() } }
                Button("Send") { Task { await model.send() } }
                    .disabled(model.draft.isEmpty)
            }
        }
        .padding()
        .onAppear { model.start() }
        .onDisappear { model.stop() }
    }
}
#endif
