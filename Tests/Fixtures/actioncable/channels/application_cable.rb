# Connection authentication and the base channel class of the fixture app.
module ApplicationCable
  class Connection < ActionCable::Connection::Base
    identified_by :current_user

    def connect
      self.current_user = user_from_token or reject_unauthorized_connection
    end

    private

    def user_from_token
      token = request.params["token"]
      if token.nil? && (header = request.headers["Authorization"])
        token = header[/\ABearer (.+)\z/, 1]
      end
      token && token[/\Avalid-(\w+)\z/, 1]
    end
  end

  class Channel < ActionCable::Channel::Base
  end
end
