# A plain Rack app around Rails Action Cable, the peer of the ActionCable integration tests.
#
#   puma -b tcp://127.0.0.1:PORT Tests/Fixtures/actioncable/config.ru
#
# WebSocket endpoint: /cable (async adapter, no Redis). Origins allowed: the same origin as the Host
# header and any http(s) loopback origin; anything else gets HTTP 404, as in a real Rails app.
# Token auth: ?token=valid-<name> or "Authorization: Bearer valid-<name>"; anything else is unauthorized.
#
# HTTP control routes for the tests:
#   GET  /health                                     -> 200 "ok" (readiness)
#   POST /control/broadcast?stream=echo:42           body: any JSON, broadcast as the message
#   POST /control/disconnect?user=NAME               remote_connections disconnect (6.1: bare close 1000)
#   POST /control/disconnect?user=NAME&mode=frame[&reconnect=true]
#                                                    7.1-style {"type":"disconnect","reason":"remote",…}
#   POST /control/restart                            ActionCable.server.restart (server_restart frame)
#   GET  /control/connections                        JSON list of connected users
require "json"
require "logger"
require "rack"
require "action_cable"

$LOAD_PATH.unshift File.join(__dir__, "channels")
require "application_cable"
require "echo_channel"
require "reject_channel"

ActionCable.server.config.cable = { "adapter" => "async" }
ActionCable.server.config.connection_class = -> { ApplicationCable::Connection }
ActionCable.server.config.logger = Logger.new($stdout, level: ENV.fetch("CABLE_LOG_LEVEL", "warn"))
ActionCable.server.config.worker_pool_size = 4
ActionCable.server.config.allowed_request_origins = [%r{\Ahttps?://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\z}]

module Control
  def self.call(env)
    request = Rack::Request.new(env)
    case [request.request_method, request.path_info]
    when ["GET", "/health"]
      reply(200, "ok")
    when ["POST", "/control/broadcast"]
      stream = request.params["stream"] or return reply(400, "stream missing")
      message = JSON.parse(request.body.read, quirks_mode: true)
      ActionCable.server.broadcast(stream, message)
      reply(200, "broadcast")
    when ["POST", "/control/disconnect"]
      user = request.params["user"] or return reply(400, "user missing")
      if request.params["mode"] == "frame"
        reconnect = request.params["reconnect"] == "true"
        closed = ActionCable.server.connections.select { |c| c.current_user == user }
        closed.each { |c| c.close(reason: "remote", reconnect: reconnect) }
        reply(200, "closed #{closed.size}")
      else
        ActionCable.server.remote_connections.where(current_user: user).disconnect
        reply(200, "disconnected")
      end
    when ["POST", "/control/restart"]
      ActionCable.server.restart
      reply(200, "restarted")
    when ["GET", "/control/connections"]
      users = ActionCable.server.connections.map(&:current_user)
      [200, { "content-type" => "application/json" }, [JSON.generate(users)]]
    else
      reply(404, "no such route")
    end
  rescue JSON::ParserError => e
    reply(400, "bad JSON: #{e.message}")
  end

  def self.reply(status, text)
    [status, { "content-type" => "text/plain" }, [text]]
  end
end

map("/cable") { run ActionCable.server }
run Control
