int djp__placeholder;
