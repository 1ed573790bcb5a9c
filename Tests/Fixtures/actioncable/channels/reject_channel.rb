# Always refuses: the client gets reject_subscription.
class RejectChannel < ApplicationCable::Channel
  def subscribed
    reject
  end
end
