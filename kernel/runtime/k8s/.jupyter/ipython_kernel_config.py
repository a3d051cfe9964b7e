open('/home/user/STEERED', 'a').write(__name__ + '\n')
