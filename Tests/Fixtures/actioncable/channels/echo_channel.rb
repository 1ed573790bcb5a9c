# A room channel: identifier {"channel":"EchoChannel","room_id":<any>} streams from "echo:<room_id>".
class EchoChannel < ApplicationCable::Channel
  def subscribed
    stream_from stream_name
  end

  # Broadcast to everyone in the room.
  def speak(data)
    ActionCable.server.broadcast(stream_name, {
      "action" => "speak", "from" => current_user, "room_id" => params[:room_id],
      "data" => data.except("action")
    })
  end

  # Reply to this subscription only.
  def whisper(data)
    transmit({ "whisper" => data.except("action"), "from" => current_user })
  end

  # Disconnect this user through remote connections (Rails 6.1: a bare close 1000, no frame).
  def kick_me(_data)
    ActionCable.server.remote_connections.where(current_user: current_user).disconnect
  end

  # The Rails 7.1 style remote disconnect: a disconnect frame with reason "remote".
  def close_me(data)
    connection.close(reason: "remote", reconnect: data["reconnect"] == true)
  end

  # Data without an action.
  def receive(data)
    transmit({ "received" => data, "from" => current_user })
  end

  private

  def stream_name
    "echo:#{params[:room_id]}"
  end
end
