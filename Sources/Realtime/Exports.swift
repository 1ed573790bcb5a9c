@_exported import RealtimeCore
