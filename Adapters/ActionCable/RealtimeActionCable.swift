import RealtimeCore

// The ActionCable dialect is built in this target; see ../shared/protocols and the open issues.
