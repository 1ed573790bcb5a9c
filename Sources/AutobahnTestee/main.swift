print("AutobahnTestee: not written yet")
