print("realtime: the command-line tool is not written yet")
