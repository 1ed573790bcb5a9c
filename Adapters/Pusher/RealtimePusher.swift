import RealtimeCore

// The Pusher dialect is built in this target; see ../shared/protocols and the open issues.
