build/ref/round.o: ref/round.c ref/round.h
ref/round.h:
