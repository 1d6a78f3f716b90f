def main():
    print("hi")
