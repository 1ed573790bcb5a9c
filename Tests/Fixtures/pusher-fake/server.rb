# frozen_string_literal: true
# Runs pusher-fake (the installed gem, or the copy provision.sh made: ruby -I .peers/pusher-fake/lib) in the
# foreground for Tests/IntegrationTests/PusherFake*.swift, which start and kill it.
# Env: PUSHER_WS_PORT, PUSHER_HTTP_PORT (required). Prints "READY ws=<port> http=<port>" once listening.
# With PUSHER_TLS_CERT and PUSHER_TLS_KEY (PEM files) the WebSocket port speaks wss only (em-websocket's TLS).
$stdout.sync = true
$stderr.sync = true
require "pusher-fake"

PusherFake.configure do |c|
  c.app_id = "424242"
  c.key = "peer-key"
  c.secret = "peer-secret"
  c.socket_options = { host: "127.0.0.1", port: Integer(ENV.fetch("PUSHER_WS_PORT")) }
  if ENV["PUSHER_TLS_CERT"]
    c.socket_options[:secure] = true
    c.socket_options[:tls_options] = { cert_chain_file: ENV.fetch("PUSHER_TLS_CERT"),
                                       private_key_file: ENV.fetch("PUSHER_TLS_KEY") }
  end
  c.web_options = { host: "127.0.0.1", port: Integer(ENV.fetch("PUSHER_HTTP_PORT")) }
end

# A frame that makes pusher-fake raise (bad JSON) must end that client only, not the reactor and every test.
EventMachine.error_handler { |e| warn("pusher-fake error (continuing): #{e.class}: #{e.message}") }
%w[INT TERM].each { |sig| Signal.trap(sig) { EventMachine.stop } }

EventMachine.run do
  PusherFake::Server.start_web_server
  PusherFake::Server.start_socket_server
  puts "READY ws=#{ENV['PUSHER_WS_PORT']} http=#{ENV['PUSHER_HTTP_PORT']} pusher-fake=#{PusherFake::VERSION}"
end
