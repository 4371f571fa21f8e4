from helpers import banner

print(banner("Weekly report"))
