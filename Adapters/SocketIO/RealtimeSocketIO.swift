import RealtimeCore

// The SocketIO dialect is built in this target; see ../shared/protocols and the open issues.
